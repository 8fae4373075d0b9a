package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
)

// TestProblemDiskFull: a write the operating system refused with ENOSPC
// (not only the stores' own refusals, which queries maps itself) is a 507
// problem naming the condition, not a 500.
func TestProblemDiskFull(t *testing.T) {
	w := httptest.NewRecorder()
	problem(w, fmt.Errorf("create view v: meta put catalog: %w", syscall.ENOSPC))
	var body map[string]any
	if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
		t.Fatal(err)
	}
	if w.Code != 507 || body["status"] != float64(507) || body["title"] != "insufficient storage" ||
		!strings.Contains(body["detail"].(string), "no space left on device") ||
		w.Header().Get("Content-Type") != "application/problem+json" {
		t.Fatalf("got %d %s %v", w.Code, w.Header().Get("Content-Type"), body)
	}
}
