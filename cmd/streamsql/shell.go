package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"

	"github.com/peterh/liner"
)

const (
	prompt     = "streamsql> "
	contPrompt = "       ... "
)

const shellHelp = `Statements end with ';' and may span lines. Ctrl-C drops the statement
being typed, or cancels the one running; Ctrl-D or \q quits.

  \x [on|off]             expanded rows: one line per column (toggles)
  \format table|json|csv  output format
  \?                      this help
  \q                      quit (also: quit, exit)
`

// shell is the interactive shell: it reads statements with line editing
// and history (github.com/peterh/liner, on the process's terminal) and
// runs each as it is ended with ';'.
func (c *cli) shell(cl *client, pr *printer, histPath string) error {
	ln := liner.NewLiner()
	defer ln.Close()
	ln.SetCtrlCAborts(true)
	ln.SetMultiLineMode(true)
	if histPath != "" {
		if f, err := os.Open(histPath); err == nil {
			ln.ReadHistory(f)
			f.Close()
		}
	}
	// Ctrl-C is a key while liner reads a line (ErrPromptAborted) and a
	// SIGINT the rest of the time: it cancels the statement running, and
	// never ends the shell.
	sigc := make(chan os.Signal, 1)
	signal.Notify(sigc, os.Interrupt)
	defer signal.Stop(sigc)
	fmt.Fprintf(c.stdout, "streamsql shell on %s: statements end with ';', \\? for help, \\q to quit\n", cl.base)
	var stmt strings.Builder
	for {
		p := prompt
		if stmt.Len() > 0 {
			p = contPrompt
		}
		line, err := ln.Prompt(p)
		switch {
		case errors.Is(err, liner.ErrPromptAborted): // Ctrl-C
			stmt.Reset()
			continue
		case errors.Is(err, io.EOF): // Ctrl-D
			fmt.Fprintln(c.stdout)
			return nil
		case err != nil:
			return fmt.Errorf("reading the terminal: %w", err)
		}
		select {
		case <-sigc: // Ctrl-C between two prompts: the statement is dropped
			stmt.Reset()
		default:
		}
		if stmt.Len() == 0 {
			t := strings.TrimSpace(line)
			if t == "" {
				continue
			}
			if t == "quit" || t == "exit" || t == `\q` {
				return nil
			}
			if strings.HasPrefix(t, `\`) {
				ln.AppendHistory(t)
				c.meta(pr, t)
				continue
			}
		}
		stmt.WriteString(line)
		stmt.WriteByte('\n')
		if !statementEnds(stmt.String()) {
			continue
		}
		text := stmt.String()
		stmt.Reset()
		ln.AppendHistory(strings.Join(strings.Fields(text), " "))
		if histPath != "" {
			if err := saveHistory(ln, histPath); err != nil {
				fmt.Fprintf(c.stderr, "history %s: %v\n", histPath, err)
				histPath = "" // said once
			}
		}
		if err := c.runCancelable(sigc, cl, pr, text); err != nil && !errors.Is(err, errReported) {
			fmt.Fprintln(c.stderr, "ERROR:", err)
		}
	}
}

// runCancelable runs text; a SIGINT on sigc meanwhile cancels it.
func (c *cli) runCancelable(sigc <-chan os.Signal, cl *client, pr *printer, text string) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-sigc:
			cancel()
		case <-done:
		}
	}()
	return c.runSQL(ctx, cl, pr, text)
}

// meta runs a backslash command.
func (c *cli) meta(pr *printer, t string) {
	f := strings.Fields(t)
	switch {
	case f[0] == `\?` || f[0] == `\h` || f[0] == `\help`:
		fmt.Fprint(c.stdout, shellHelp)
	case f[0] == `\x` && len(f) <= 2:
		switch {
		case len(f) == 1:
			pr.expanded = !pr.expanded
		case f[1] == "on":
			pr.expanded = true
		case f[1] == "off":
			pr.expanded = false
		default:
			fmt.Fprintf(c.stderr, "\\x %s: use \\x, \\x on or \\x off\n", f[1])
			return
		}
		state := "off"
		if pr.expanded {
			state = "on"
		}
		fmt.Fprintf(c.stdout, "Expanded display is %s.\n", state)
	case f[0] == `\format` && len(f) == 2:
		if err := oneOf("format", f[1], "table", "json", "csv"); err != nil {
			fmt.Fprintf(c.stderr, "\\format %s: use table, json or csv\n", f[1])
			return
		}
		pr.format = f[1]
		fmt.Fprintf(c.stdout, "Output format is %s.\n", f[1])
	default:
		fmt.Fprintf(c.stderr, "unknown command %s: \\? lists them\n", t)
	}
}

// saveHistory writes the history to path (its directory made if need be),
// by a rename so that a crash leaves the old file or the new one.
func saveHistory(ln *liner.State, path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if _, err := ln.WriteHistory(f); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// statementEnds reports whether text ends a statement: its last token is
// a ';' outside quotes ('…', "…", `…`, with MySQL's backslash and doubled
// quote escapes) and comments (-- , #, /* */); only spaces and comments
// may follow it.
func statementEnds(text string) bool {
	ends := false
	for i := 0; i < len(text); i++ {
		switch ch := text[i]; {
		case ch == '\'' || ch == '"' || ch == '`':
			j := i + 1
			for ; j < len(text); j++ {
				if text[j] == '\\' && ch != '`' {
					j++
					continue
				}
				if text[j] == ch {
					if j+1 < len(text) && text[j+1] == ch { // doubled: a quote inside
						j++
						continue
					}
					break
				}
			}
			if j >= len(text) {
				return false // the quote is still open
			}
			i, ends = j, false
		case ch == '#' || ch == '-' && strings.HasPrefix(text[i:], "--") && (i+2 == len(text) || strings.ContainsRune(" \t\r\n", rune(text[i+2]))):
			nl := strings.IndexByte(text[i:], '\n')
			if nl < 0 {
				return ends
			}
			i += nl
		case ch == '/' && strings.HasPrefix(text[i:], "/*"):
			end := strings.Index(text[i+2:], "*/")
			if end < 0 {
				return false // the comment is still open
			}
			i += 2 + end + 1
		case ch == ';':
			ends = true
		case ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n':
		default:
			ends = false
		}
	}
	return ends
}
