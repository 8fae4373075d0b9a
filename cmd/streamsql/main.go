// Command streamsql is the streamsql server and its command-line client:
// `streamsql serve` runs the server, `streamsql sql` sends SQL to one, and
// `streamsql bench` runs a Nexmark query in-process. Flags, wiring and
// signals only: the logic lives in the packages.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
)

const usage = `usage: streamsql <command> [flags]

commands:
  serve   run the server (streamsql serve --help)
  sql     send SQL to a server: streamsql sql [--addr A] [--token T] 'SQL' (or SQL on stdin)
  bench   run a Nexmark query in-process and report events per CPU second;
          bench --ingest: durable NDJSON ingest over loopback HTTP, rows per CPU second
`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "serve":
		err = serve(os.Args[2:])
	case "sql":
		err = sqlCmd(os.Args[2:])
	case "bench":
		err = bench(os.Args[2:])
	case "-h", "--help", "help":
		fmt.Print(usage)
		return
	default:
		fmt.Fprintf(os.Stderr, "streamsql: unknown command %q\n%s", os.Args[1], usage)
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "streamsql:", err)
		os.Exit(1)
	}
}

func sqlCmd(args []string) error {
	fs := flag.NewFlagSet("sql", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:8080", "server address")
	token := fs.String("token", os.Getenv("STREAMSQL_TOKEN"), "bearer token (default $STREAMSQL_TOKEN)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	text := strings.Join(fs.Args(), " ")
	if text == "" {
		b, err := io.ReadAll(os.Stdin)
		if err != nil {
			return err
		}
		text = string(b)
	}
	req, err := http.NewRequest("POST", "http://"+*addr+"/v1/sql", strings.NewReader(text))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/sql")
	if *token != "" {
		req.Header.Set("Authorization", "Bearer "+*token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var pretty bytes.Buffer
	if json.Indent(&pretty, body, "", "  ") == nil {
		body = pretty.Bytes()
	}
	os.Stdout.Write(append(body, '\n'))
	if resp.StatusCode != 200 {
		return errors.New(resp.Status)
	}
	return nil
}
