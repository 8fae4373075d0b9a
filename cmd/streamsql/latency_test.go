package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"encoding/xml"
	"image/png"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	httpapi "github.com/streamsql/streamsql/http"
)

// TestBenchLatency runs a tiny `bench --latency` (one interval, 1 s, the
// built-in results) and checks the JSON report's structure, that the
// latencies are positive and ordered, and that the plot decodes as a PNG
// (and, drawn from the same results, parses as SVG). No timed assertions.
func TestBenchLatency(t *testing.T) {
	dir := t.TempDir()
	pngFile := filepath.Join(dir, "lat.png")
	var out, errb bytes.Buffer
	c := &cli{stdin: strings.NewReader(""), stdout: &out, stderr: &errb, getenv: func(string) string { return "" }}
	if code := c.run([]string{"bench", "--latency", "--intervals", "200ms", "--duration", "1s", "--rate", "2000", "--batch", "100",
		"--outputs", "builtin", "--state-keys", "1000", "--json", "--plot", pngFile}); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var res []httpapi.LatencyResult
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		var r httpapi.LatencyResult
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("line %s: %v", sc.Bytes(), err)
		}
		res = append(res, r)
	}
	if len(res) != 3 || res[0].Reader != "results-latest" || res[1].Reader != "results-committed" || res[2].Reader != "results-at_most_once" {
		t.Fatalf("results %+v", res)
	}
	for _, r := range res {
		if r.IntervalMs != 200 || r.Rows != int64(r.Requests)*100 || r.Rows == 0 || r.CPUSecPerMillion <= 0 || r.StateKeys != 1000 || r.CheckpointsOf != "lat_state" {
			t.Errorf("result %+v", r)
		}
		if !(0 < r.LatencyP50Ms && r.LatencyP50Ms <= r.LatencyP99Ms && r.LatencyP99Ms <= r.LatencyMaxMs) {
			t.Errorf("%s: latencies p50 %v p99 %v max %v", r.Reader, r.LatencyP50Ms, r.LatencyP99Ms, r.LatencyMaxMs)
		}
	}
	f, err := os.Open(pngFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if img, err := png.Decode(f); err != nil || img.Bounds().Dx() == 0 {
		t.Fatalf("plot: %v", err)
	}
	svgFile := filepath.Join(dir, "lat.svg")
	if err := latencyPlot(svgFile, res); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(svgFile)
	if err != nil {
		t.Fatal(err)
	}
	d := xml.NewDecoder(bytes.NewReader(b))
	root := ""
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("svg: %v", err)
		}
		if se, ok := tok.(xml.StartElement); ok && root == "" {
			root = se.Name.Local
		}
	}
	if root != "svg" {
		t.Fatalf("svg root element %q", root)
	}
}
