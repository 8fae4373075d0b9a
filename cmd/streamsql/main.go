package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/term"

	"github.com/streamsql/streamsql/internal/fault"
)

// Exit codes: 0 success, 1 a failure while running (the server answered
// an error, a connection or a file failed), 2 a wrong command line.
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
)

const usage = `usage: streamsql <command> [flags]

commands:
  serve     run the server
  sql       send SQL to a server: streamsql sql 'SQL'; SQL on stdin; or,
            without arguments on a terminal, an interactive shell
  bench     run a Nexmark query in-process and report events per CPU second;
            bench --ingest: durable NDJSON ingest over loopback HTTP
  version   print the version and the commit it was built from
  help      streamsql help <command> prints a command's flags

Each command takes --help. docs/cli.md has them all.
`

// cli is the process's outside world, so that commands can be run in a test.
type cli struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	getenv         func(string) string
	// stdinTTY and stdoutTTY: whether stdin and stdout are terminals.
	stdinTTY, stdoutTTY bool
}

func main() {
	// Fault points are armed from the environment once, here, before
	// anything runs (crash tests set STREAMSQL_FAULT / STREAMSQL_SPIN).
	fault.ArmFromEnv()
	c := &cli{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv,
		stdinTTY: term.IsTerminal(int(os.Stdin.Fd())), stdoutTTY: term.IsTerminal(int(os.Stdout.Fd()))}
	os.Exit(c.run(os.Args[1:]))
}

// commands maps each command to its function.
func commands() map[string]func(*cli, []string) error {
	return map[string]func(*cli, []string) error{
		"serve":   (*cli).serve,
		"sql":     (*cli).sqlCmd,
		"bench":   (*cli).bench,
		"version": (*cli).version,
	}
}

// run runs the command line args (without the program name) and returns
// the exit code.
func (c *cli) run(args []string) int {
	if len(args) == 0 {
		fmt.Fprint(c.stderr, usage)
		return exitUsage
	}
	name, rest := args[0], args[1:]
	switch name {
	case "-h", "-help", "--help":
		fmt.Fprint(c.stdout, usage)
		return exitOK
	case "help":
		if len(rest) == 0 {
			fmt.Fprint(c.stdout, usage)
			return exitOK
		}
		if len(rest) > 1 {
			fmt.Fprintf(c.stderr, "streamsql help: one command at a time, got %q\n\n%s", rest, usage)
			return exitUsage
		}
		if _, ok := commands()[rest[0]]; !ok {
			fmt.Fprintf(c.stderr, "streamsql help: unknown command %q\n\n%s", rest[0], usage)
			return exitUsage
		}
		name, rest = rest[0], []string{"--help"}
	case "-version", "--version":
		name, rest = "version", nil
	}
	cmd, ok := commands()[name]
	if !ok {
		fmt.Fprintf(c.stderr, "streamsql: unknown command %q\n\n%s", name, usage)
		return exitUsage
	}
	return c.exit(name, cmd(c, rest))
}

// exit reports err of command name and returns the exit code.
func (c *cli) exit(name string, err error) int {
	var ue *usageError
	switch {
	case err == nil, errors.Is(err, errHelp):
		return exitOK
	case errors.As(err, &ue):
		fmt.Fprintf(c.stderr, "streamsql %s: %v\n\n", name, ue.err)
		ue.usage(c.stderr)
		return exitUsage
	case errors.Is(err, errReported):
		return exitError
	}
	fmt.Fprintf(c.stderr, "streamsql %s: %v\n", name, err)
	return exitError
}

// errHelp: the command printed its usage on stdout, as asked (exit 0).
var errHelp = errors.New("help printed")

// errReported: the command failed and has said why (exit 1).
var errReported = errors.New("error reported")

// usageError is a wrong command line: the message, then the command's
// usage, go to stderr (exit 2).
type usageError struct {
	err   error
	usage func(io.Writer)
}

func (e *usageError) Error() string { return e.err.Error() }

// command is one command's flags and the text --help prints before them.
type command struct {
	fs   *flag.FlagSet
	head string
}

func newCommand(name, head string) *command {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are reported once, by exit
	fs.Usage = func() {}
	return &command{fs: fs, head: head}
}

// usage writes the command's help: its head and every flag.
func (cmd *command) usage(w io.Writer) {
	fmt.Fprint(w, cmd.head)
	n := 0
	cmd.fs.VisitAll(func(*flag.Flag) { n++ })
	if n > 0 {
		fmt.Fprint(w, "\nflags:\n")
		cmd.fs.SetOutput(w)
		cmd.fs.PrintDefaults()
		cmd.fs.SetOutput(io.Discard)
	}
}

// fail is a usage error of this command.
func (cmd *command) fail(format string, args ...any) error {
	return &usageError{err: fmt.Errorf(format, args...), usage: cmd.usage}
}

// parse parses args. Flags may come before and after the arguments
// (streamsql sql 'SHOW TABLES' --format csv); after "--" everything is an
// argument. --help prints the usage on stdout and returns errHelp.
func (cmd *command) parse(c *cli, args []string) ([]string, error) {
	var pos []string
	for {
		err := cmd.fs.Parse(args)
		if errors.Is(err, flag.ErrHelp) {
			cmd.usage(c.stdout)
			return nil, errHelp
		}
		if err != nil {
			return nil, &usageError{err: err, usage: cmd.usage}
		}
		rest := cmd.fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		// Parse stops at the first argument, or after "--".
		if len(args)-len(rest) > 0 && args[len(args)-len(rest)-1] == "--" {
			return append(pos, rest...), nil
		}
		pos, args = append(pos, rest[0]), rest[1:]
	}
}

// oneOf checks that v is one of the allowed values of flag name.
func oneOf(name, v string, allowed ...string) error {
	for _, a := range allowed {
		if v == a {
			return nil
		}
	}
	return fmt.Errorf("--%s %q: use %s", name, v, strings.Join(allowed, ", "))
}
