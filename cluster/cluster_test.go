package cluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

func TestServerID(t *testing.T) {
	dir := t.TempDir()
	id, err := ServerID(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !validID(id) {
		t.Fatalf("new id %q", id)
	}
	again, err := ServerID(dir)
	if err != nil || again != id {
		t.Fatalf("second read: %q, %v; want %q", again, err, id)
	}
	other, err := ServerID(t.TempDir())
	if err != nil || other == id {
		t.Fatalf("another data directory's id: %q, %v (this one's %q)", other, err, id)
	}
	if err := os.WriteFile(filepath.Join(dir, serverIDFile), []byte("not-an-id\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ServerID(dir); err == nil || !strings.Contains(err.Error(), "not 32 hex digits") {
		t.Fatalf("damaged id file: %v", err)
	}
	left, _ := filepath.Glob(filepath.Join(dir, ".server-id.tmp-*"))
	if len(left) != 0 {
		t.Fatalf("temporary files left: %v", left)
	}
}

func TestCheckName(t *testing.T) {
	for _, ok := range []string{"prod", "eu-west_1", strings.Repeat("a", 200)} {
		if err := CheckName(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "a.b", "a/b", "ä", strings.Repeat("a", 201)} {
		if err := CheckName(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func newBroker(t *testing.T) []string {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c.ListenAddrs()
}

func openCatalog(t *testing.T, brokers []string, server string) *Catalog {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := OpenCatalog(ctx, CatalogOptions{Brokers: brokers, Cluster: "test", ServerID: server})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// tailUntil collects c's records from offset from until it has n.
func tailUntil(t *testing.T, c *Catalog, from int64, n int) []Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var got []Record
	errDone := fmt.Errorf("done")
	err := c.Tail(ctx, from, func(r Record) error {
		got = append(got, r)
		if len(got) == n {
			return errDone
		}
		return nil
	})
	if len(got) != n {
		t.Fatalf("tail from %d: %d of %d records (%v)", from, len(got), n, err)
	}
	return got
}

// Two servers append at once: every server tails the same records in the
// same order, each offset once, each statement as appended, and the
// offsets Append returned are theirs.
func TestCatalogOneOrder(t *testing.T) {
	brokers := newBroker(t)
	a, b := openCatalog(t, brokers, "a"), openCatalog(t, brokers, "b")
	const per = 50
	appended := map[int64]Statement{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, c := range []*Catalog{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range per {
				st := Statement{SQL: fmt.Sprintf("CREATE VIEW v_%s_%d AS SELECT 1", c.opts.ServerID, i), Dialect: "postgresql"}
				off, err := c.Append(context.Background(), st)
				if err != nil {
					t.Error(err)
					return
				}
				st.Server = c.opts.ServerID
				mu.Lock()
				if _, dup := appended[off]; dup {
					t.Errorf("offset %d returned twice", off)
				}
				appended[off] = st
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	ra, rb := tailUntil(t, a, 0, 2*per), tailUntil(t, b, 0, 2*per)
	if !slices.Equal(ra, rb) {
		t.Fatalf("the servers read different catalogs:\n%v\n%v", ra, rb)
	}
	for i, r := range ra {
		if r.Offset != int64(i) {
			t.Fatalf("record %d at offset %d", i, r.Offset)
		}
		if appended[r.Offset] != r.Statement {
			t.Fatalf("offset %d: read %+v, appended %+v", r.Offset, r.Statement, appended[r.Offset])
		}
	}
	end, err := a.End(context.Background())
	if err != nil || end != 2*per {
		t.Fatalf("end %d, %v; want %d", end, err, 2*per)
	}
	// From the middle: the rest, in order.
	if rest := tailUntil(t, b, per, per); !slices.Equal(rest, ra[per:]) {
		t.Fatalf("tail from %d differs", per)
	}
}

// A record that is not a statement stops the tail there, naming its
// offset, after the statements before it were applied; an apply error
// stops it too, wrapped with the offset.
func TestCatalogStopsAtBadRecord(t *testing.T) {
	brokers := newBroker(t)
	c := openCatalog(t, brokers, "a")
	if _, err := c.Append(context.Background(), Statement{SQL: "CREATE TABLE t (a BIGINT)"}); err != nil {
		t.Fatal(err)
	}
	if err := c.prod.ProduceSync(context.Background(), &kgo.Record{Topic: c.Topic(), Value: []byte("garbage")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var applied []int64
	err := c.Tail(ctx, 0, func(r Record) error { applied = append(applied, r.Offset); return nil })
	if err == nil || !strings.Contains(err.Error(), "record at offset 1 is not a statement") || !slices.Equal(applied, []int64{0}) {
		t.Fatalf("tail: %v, applied %v", err, applied)
	}
	err = c.Tail(ctx, 0, func(r Record) error { return fmt.Errorf("table t already exists") })
	if err == nil || !strings.Contains(err.Error(), "applying offset 0: table t already exists") {
		t.Fatalf("tail with a failing apply: %v", err)
	}
}

// A catalog topic of two partitions has no one order: refused.
func TestCatalogTopicOnePartition(t *testing.T) {
	brokers := newBroker(t)
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopic(context.Background(), 2, -1, nil, CatalogTopic("test")); err != nil {
		t.Fatal(err)
	}
	_, err = OpenCatalog(context.Background(), CatalogOptions{Brokers: brokers, Cluster: "test", ServerID: "a"})
	if err == nil || !strings.Contains(err.Error(), "has 2 partitions") {
		t.Fatalf("open over a two-partition topic: %v", err)
	}
}
