package plan

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestRedactSecrets: passwords in URLs, key=value strings and query
// strings are replaced, as written, inside SQL text, JSON and log lines;
// everything else is left as it is.
func TestRedactSecrets(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"postgres://alice:s3cret@db.example:5432/app", "postgres://alice:REDACTED@db.example:5432/app"},
		{"postgresql://alice:s3cret@db", "postgresql://alice:REDACTED@db"},
		{"postgres://alice:p@ss:w@rd@h1,h2/app", "postgres://alice:REDACTED@h1,h2/app"},
		{"CONNECTION='postgres://alice:it''s@h')", "CONNECTION='postgres://alice:REDACTED@h')"},
		{"CONNECTION='postgres://u:a%20b@h' ENGINE_ATTRIBUTE='{}'", "CONNECTION='postgres://u:REDACTED@h' ENGINE_ATTRIBUTE='{}'"},
		{`{"sql":"x='postgres://u:pw@h'","b":"c@d"}`, `{"sql":"x='postgres://u:REDACTED@h'","b":"c@d"}`},
		{"postgres://h/db?user=carol&password=qs-secret&sslmode=disable", "postgres://h/db?user=carol&password=REDACTED&sslmode=disable"},
		{`"postgres://h/db?user=carol\u0026password=qs\u0026sslmode=require"`, `"postgres://h/db?user=carol\u0026password=REDACTED\u0026sslmode=require"`},
		{"host=h port=5432 password=kv-secret user=bob", "host=h port=5432 password=REDACTED user=bob"},
		{"host=h PASSWORD = kv-secret", "host=h PASSWORD = REDACTED"},
		{"host=h password='sp ace' user=u", "host=h password=REDACTED user=u"},
		{"CONNECTION='host=h password=''sp ace'' user=u'", "CONNECTION='host=h password=REDACTED user=u'"},
		{"CONNECTION='host=h password=x''y user=u'", "CONNECTION='host=h password=REDACTED user=u'"},
		{"CONNECTION='host=h password=last'", "CONNECTION='host=h password=REDACTED'"},
		{`CONNECTION=\'host=h password=\'a b\'\'`, `CONNECTION=\'host=h password=REDACTED\'`},
		{"sslpassword=k1 passwd=k2 pwd=k3", "sslpassword=REDACTED passwd=REDACTED pwd=REDACTED"},
		{`err="connect: password=x\"y\n more"`, `err="connect: password=REDACTED\"y\n more"`},
		// Not secrets.
		{"postgres://alice@h/db", "postgres://alice@h/db"},
		{"postgres://h:5432/db", "postgres://h:5432/db"},
		{"postgres://alice:@h/db", "postgres://alice:@h/db"},
		{"password authentication failed for user alice", "password authentication failed for user alice"},
		{"mypwd=3 a@b:c", "mypwd=3 a@b:c"},
		{"localhost:9092,other:9092", "localhost:9092,other:9092"},
		{"://x:y@z", "://x:y@z"},
		{"", ""},
	} {
		if got := RedactSecrets(c.in); got != c.want {
			t.Errorf("RedactSecrets(%q)\n = %q\nwant %q", c.in, got, c.want)
		}
	}
	// JSON stays JSON, whatever the password holds.
	for _, pw := range []string{`a"b`, `a\b`, `"`, `x'y`, "a b", `}"]`} {
		for _, conn := range []string{"postgres://u:" + pw + "@h/db", "host=h password=" + pw + " user=u"} {
			b, _ := json.Marshal(map[string]string{"sql": "CREATE ... CONNECTION='" + conn + "'", "next": "ok"})
			var m map[string]string
			if err := json.Unmarshal([]byte(RedactSecrets(string(b))), &m); err != nil || m["next"] != "ok" {
				t.Errorf("%s: redacted JSON %s: %v", b, RedactSecrets(string(b)), err)
			}
		}
	}
}

func FuzzRedactSecrets(f *testing.F) {
	f.Add("postgres://u:secret@h/db password=x")
	f.Fuzz(func(t *testing.T, s string) {
		r := RedactSecrets(s)
		if !strings.Contains(s, "://") && !strings.Contains(strings.ToLower(s), "p") && r != s {
			t.Fatalf("changed %q into %q", s, r)
		}
		if RedactSecrets(r) != r {
			t.Fatalf("not idempotent: %q -> %q -> %q", s, r, RedactSecrets(r))
		}
	})
}
