package planner

import (
	"sort"
	"strings"

	"github.com/agnivade/levenshtein"
)

// nearest is the choice closest to name in edit distance, when it is close
// enough to be a misspelling of it (two edits, or a third of its letters
// for a longer name, and fewer than its length); "" otherwise.
func nearest(name string, choices []string) string {
	best, bestD := "", 0
	for _, c := range choices {
		d := levenshtein.ComputeDistance(strings.ToLower(name), strings.ToLower(c))
		if best == "" || d < bestD {
			best, bestD = c, d
		}
	}
	if best == "" || bestD > max(2, len(name)/3) || bestD >= len(name) {
		return ""
	}
	return best
}

// didYouMean is " (did you mean X?)" for the choice nearest to name, or "".
func didYouMean(name string, choices []string) string {
	if n := nearest(name, choices); n != "" {
		return " (did you mean " + n + "?)"
	}
	return ""
}

// keysOf is the set's members, sorted.
func keysOf(set ...map[string]bool) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range set {
		for k := range s {
			if !seen[k] {
				seen[k] = true
				out = append(out, k)
			}
		}
	}
	sort.Strings(out)
	return out
}
