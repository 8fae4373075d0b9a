package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/mattn/go-runewidth"
)

// printer writes answers in one format: table (aligned columns, or
// expanded rows), json (the server's body, indented) or csv.
type printer struct {
	out      io.Writer
	format   string
	expanded bool
}

// cell is one value of a row, as shown.
type cell struct {
	text   string
	null   bool
	number bool // right-aligned in a table
	str    bool // a JSON string (CSV quotes an empty one)
}

// confirmations are what a statement without rows prints in a table.
var confirmations = map[string]string{
	"create_table": "CREATE TABLE",
	"create_view":  "CREATE VIEW",
	"insert":       "INSERT INTO",
	"drop_table":   "DROP TABLE",
	"drop_view":    "DROP VIEW",
	"set":          "SET",
}

func (p *printer) print(a *answer) error {
	if p.format == "json" {
		var b bytes.Buffer
		if json.Indent(&b, a.raw, "", "  ") != nil {
			b.Reset()
			b.Write(bytes.TrimSpace(a.raw))
		}
		b.WriteByte('\n')
		_, err := p.out.Write(b.Bytes())
		return err
	}
	var b bytes.Buffer
	sets := 0
	for _, r := range a.results {
		if r.Columns == nil {
			if p.format == "table" {
				b.WriteString(confirmation(r))
				b.WriteByte('\n')
			}
			continue
		}
		rows, err := decodeRows(r)
		if err != nil {
			return err
		}
		if sets > 0 || p.format == "table" && b.Len() > 0 {
			b.WriteByte('\n')
		}
		sets++
		switch {
		case p.format == "csv":
			writeCSV(&b, r.Columns, rows)
		case p.expanded:
			writeExpanded(&b, r.Columns, rows)
		default:
			writeTable(&b, r.Columns, rows)
		}
	}
	_, err := p.out.Write(b.Bytes())
	return err
}

// confirmation is the line a statement without rows prints: CREATE VIEW v.
func confirmation(r result) string {
	verb, ok := confirmations[r.Kind]
	if !ok {
		verb = strings.ToUpper(strings.ReplaceAll(r.Kind, "_", " "))
	}
	if r.Name == "" {
		return verb
	}
	return verb + " " + strings.ReplaceAll(r.Name, ",", ", ")
}

// decodeRows reads each row object's members in order (the server writes
// them in the columns' order; a name may repeat).
func decodeRows(r result) ([][]cell, error) {
	out := make([][]cell, len(r.Rows))
	for i, raw := range r.Rows {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		if t, err := dec.Token(); err != nil || t != json.Delim('{') {
			return nil, fmt.Errorf("statement %d, row %d: not a JSON object: %s", r.Statement, i, snippet(raw))
		}
		row := make([]cell, 0, len(r.Columns))
		for dec.More() {
			if _, err := dec.Token(); err != nil { // the member's name
				return nil, fmt.Errorf("statement %d, row %d: %w", r.Statement, i, err)
			}
			var v json.RawMessage
			if err := dec.Decode(&v); err != nil {
				return nil, fmt.Errorf("statement %d, row %d: %w", r.Statement, i, err)
			}
			row = append(row, toCell(v))
		}
		for len(row) < len(r.Columns) {
			row = append(row, cell{text: "NULL", null: true})
		}
		out[i] = row
	}
	return out, nil
}

func toCell(v json.RawMessage) cell {
	switch {
	case len(v) == 0 || string(v) == "null":
		return cell{text: "NULL", null: true}
	case v[0] == '"':
		var s string
		if json.Unmarshal(v, &s) == nil {
			return cell{text: s, str: true}
		}
	case v[0] == '-' || '0' <= v[0] && v[0] <= '9':
		return cell{text: string(v), number: true}
	}
	var b bytes.Buffer
	if json.Compact(&b, v) == nil {
		return cell{text: b.String()}
	}
	return cell{text: string(v)}
}

// shown is a cell's text for a terminal: its lines, with tabs and other
// control characters escaped so that columns stay aligned.
func shown(s string) []string {
	s = strings.TrimRight(s, "\n")
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if strings.IndexFunc(l, func(r rune) bool { return r < ' ' || r == 0x7f }) >= 0 {
			var b strings.Builder
			for _, r := range l {
				switch {
				case r == '\t':
					b.WriteString(`\t`)
				case r == '\r':
					b.WriteString(`\r`)
				case r < ' ' || r == 0x7f:
					fmt.Fprintf(&b, `\x%02x`, r)
				default:
					b.WriteRune(r)
				}
			}
			lines[i] = b.String()
		}
	}
	return lines
}

// writeTable writes rows as aligned columns under a header, numbers to
// the right, a value of several lines on as many lines, and a count:
//
//	 name    | bids
//	---------+------
//	 auction |    3
//	(1 row)
func writeTable(b *bytes.Buffer, cols []string, rows [][]cell) {
	widths := make([]int, len(cols))
	for i, c := range cols {
		widths[i] = runewidth.StringWidth(c)
	}
	lines := make([][][]string, len(rows)) // row, column, line
	for r, row := range rows {
		lines[r] = make([][]string, len(cols))
		for i := range cols {
			ls := shown(row[i].text)
			lines[r][i] = ls
			for _, l := range ls {
				widths[i] = max(widths[i], runewidth.StringWidth(l))
			}
		}
	}
	line := func(cells []string, right []bool) {
		var l strings.Builder
		for i, s := range cells {
			if i > 0 {
				l.WriteString(" |")
			}
			l.WriteByte(' ')
			pad := strings.Repeat(" ", widths[i]-runewidth.StringWidth(s))
			if right != nil && right[i] {
				l.WriteString(pad + s)
			} else {
				l.WriteString(s + pad)
			}
		}
		b.WriteString(strings.TrimRight(l.String(), " "))
		b.WriteByte('\n')
	}
	line(cols, nil)
	for i, w := range widths {
		if i > 0 {
			b.WriteByte('+')
		}
		b.WriteString(strings.Repeat("-", w+2))
	}
	b.WriteByte('\n')
	right := make([]bool, len(cols))
	cells := make([]string, len(cols))
	for r, row := range rows {
		height := 1
		for i := range cols {
			right[i] = row[i].number
			height = max(height, len(lines[r][i]))
		}
		for h := range height {
			for i := range cols {
				cells[i] = ""
				if h < len(lines[r][i]) {
					cells[i] = lines[r][i][h]
				}
			}
			line(cells, right)
		}
	}
	writeCount(b, len(rows))
}

func writeCount(b *bytes.Buffer, n int) {
	if n == 1 {
		b.WriteString("(1 row)\n")
	} else {
		fmt.Fprintf(b, "(%d rows)\n", n)
	}
}

// writeExpanded writes each row as a record, one line per column:
//
//	-[ RECORD 1 ]----
//	name    | auction
//	bids    | 3
func writeExpanded(b *bytes.Buffer, cols []string, rows [][]cell) {
	kw := 0
	for _, c := range cols {
		kw = max(kw, runewidth.StringWidth(c))
	}
	vw := 0
	for _, row := range rows {
		for i := range cols {
			for _, l := range shown(row[i].text) {
				vw = max(vw, runewidth.StringWidth(l))
			}
		}
	}
	for r, row := range rows {
		head := fmt.Sprintf("-[ RECORD %d ]", r+1)
		b.WriteString(head + strings.Repeat("-", max(0, kw+3+vw-len(head))) + "\n")
		for i, c := range cols {
			for j, l := range shown(row[i].text) {
				key := ""
				if j == 0 {
					key = c
				}
				b.WriteString(strings.TrimRight(key+strings.Repeat(" ", kw-runewidth.StringWidth(key))+" | "+l, " "))
				b.WriteByte('\n')
			}
		}
	}
	if len(rows) == 0 {
		b.WriteString("(0 rows)\n")
	}
}

// writeCSV writes a header and the rows, RFC 4180: a NULL is an empty
// field, an empty string a quoted one (""), so the two stay apart.
func writeCSV(b *bytes.Buffer, cols []string, rows [][]cell) {
	for i, c := range cols {
		if i > 0 {
			b.WriteByte(',')
		}
		csvField(b, c, true)
	}
	b.WriteString("\r\n")
	for _, row := range rows {
		for i, c := range row[:len(cols)] {
			if i > 0 {
				b.WriteByte(',')
			}
			if !c.null {
				csvField(b, c.text, c.str)
			}
		}
		b.WriteString("\r\n")
	}
}

// csvField writes s, quoted when it holds a separator, a quote, a line
// end or leading space, or is an empty string.
func csvField(b *bytes.Buffer, s string, str bool) {
	if !(str && s == "") && !strings.ContainsAny(s, ",\"\r\n") && !strings.HasPrefix(s, " ") && !strings.HasPrefix(s, "\t") {
		b.WriteString(s)
		return
	}
	b.WriteByte('"')
	b.WriteString(strings.ReplaceAll(s, `"`, `""`))
	b.WriteByte('"')
}

// writeProblem writes a server error once: its status and message, then,
// when the server gave a position, that line of text and a caret under
// the column:
//
//	ERROR 422: statement 0: unknown column nope
//	LINE 2:   nope FROM bids
//	          ^
func writeProblem(w io.Writer, p *problem, text string) {
	fmt.Fprintf(w, "ERROR %d: %s\n", p.Status, p.Detail)
	lines := strings.Split(text, "\n")
	if p.Line < 1 || p.Line > len(lines) || p.Column < 1 {
		return
	}
	l := strings.TrimRight(lines[p.Line-1], "\r")
	col := min(p.Column-1, len(l)) // bytes before the caret
	before, after := l[:col], l[col:]
	// A long line is cut around the caret.
	const keepBefore, keepAfter = 50, 40
	lead := ""
	for runewidth.StringWidth(before) > keepBefore {
		_, n := utf8.DecodeRuneInString(before)
		before, lead = before[n:], "..."
	}
	trail := ""
	for runewidth.StringWidth(after) > keepAfter {
		_, n := utf8.DecodeLastRuneInString(after)
		after, trail = after[:len(after)-n], "..."
	}
	prefix := fmt.Sprintf("LINE %d: ", p.Line)
	var pad strings.Builder
	pad.WriteString(strings.Repeat(" ", len(prefix)+len(lead)))
	for _, r := range before {
		if r == '\t' {
			pad.WriteByte('\t')
		} else {
			pad.WriteString(strings.Repeat(" ", runewidth.RuneWidth(r)))
		}
	}
	fmt.Fprintf(w, "%s%s%s%s%s\n%s^\n", prefix, lead, before, after, trail, pad.String())
}
