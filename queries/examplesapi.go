package queries

import (
	"io/fs"
	"path"
	"sort"
	"strings"

	"github.com/streamsql/streamsql/queries/examples"
)

// Example is one example query of queries/examples for the console.
type Example struct {
	// Name is the file's path without .sql ("nexmark/q5").
	Name string `json:"name"`
	// Title is the file's leading comment; SQL the SELECT after it (of
	// the INSERT, for an example that writes a sink table: the console
	// shows it as a view).
	Title string `json:"title"`
	SQL   string `json:"sql"`
	// Setup are the CREATE TABLE statements before the query and Sink
	// the table its INSERT writes, for an example that is an INSERT
	// (Nexmark q10: a file sink); Setup then INSERT INTO Sink SQL runs it.
	Setup string `json:"setup,omitempty"`
	Sink  string `json:"sink,omitempty"`
}

// ExampleTablesSQL creates the Nexmark tables the examples read, as
// unbounded generators throttled for a console session, and q13's side
// input (its file is written by Engine.WriteExampleFiles, which GET
// /v1/examples calls).
const ExampleTablesSQL = `CREATE TABLE IF NOT EXISTS bid (auction BIGINT, bidder BIGINT, price BIGINT, channel VARCHAR(64), url VARCHAR(256),
  date_time TIMESTAMP(3), extra VARCHAR(256)) ENGINE=nexmark ENGINE_ATTRIBUTE='{"kind": "bid", "event_time": "date_time", "events_per_second": 1000}';
CREATE TABLE IF NOT EXISTS auction (id BIGINT, item_name VARCHAR(64), description VARCHAR(256), initial_bid BIGINT, reserve BIGINT,
  date_time TIMESTAMP(3), expires TIMESTAMP(3), seller BIGINT, category BIGINT, extra VARCHAR(256)) ENGINE=nexmark ENGINE_ATTRIBUTE='{"kind": "auction", "event_time": "date_time", "events_per_second": 1000}';
CREATE TABLE IF NOT EXISTS person (id BIGINT, name VARCHAR(64), email_address VARCHAR(64), credit_card VARCHAR(64), city VARCHAR(64),
  state VARCHAR(8), date_time TIMESTAMP(3), extra VARCHAR(256)) ENGINE=nexmark ENGINE_ATTRIBUTE='{"kind": "person", "event_time": "date_time", "events_per_second": 1000}';
CREATE TABLE IF NOT EXISTS side_input (` + "`key`" + ` BIGINT, ` + "`value`" + ` VARCHAR(64), version_time TIMESTAMP(3), PRIMARY KEY (` + "`key`" + `))
  ENGINE=file ENGINE_ATTRIBUTE='{"path": "` + NexmarkSideInput + `", "format": "csv", "event_time": "version_time", "bounded": true}'`

// WriteExampleFiles writes the files the examples read under the data
// directory's files/ (q13's side input), unless they are there.
func (e *Engine) WriteExampleFiles() error { return WriteExampleFiles(e.cfg.DataDir) }

// Examples lists the example queries, by name.
func Examples() []Example {
	var out []Example
	fs.WalkDir(examples.FS, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || path.Ext(p) != ".sql" {
			return err
		}
		b, err := fs.ReadFile(examples.FS, p)
		if err != nil {
			return err
		}
		ex := Example{Name: strings.TrimSuffix(p, ".sql")}
		var title []string
		lines := strings.Split(string(b), "\n")
		i := 0
		for ; i < len(lines); i++ {
			l := strings.TrimSpace(lines[i])
			if !strings.HasPrefix(l, "--") {
				break
			}
			title = append(title, strings.TrimSpace(strings.TrimPrefix(l, "--")))
		}
		ex.Title = strings.Join(title, " ")
		ex.SQL = strings.TrimSpace(strings.Join(lines[i:], "\n"))
		if parts, err := splitExample(ex.Name, b); err == nil && (parts.Setup != "" || parts.Sink != "") {
			ex.SQL, ex.Setup, ex.Sink = strings.TrimSpace(parts.Select), parts.Setup, parts.Sink
		}
		out = append(out, ex)
		return nil
	})
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
