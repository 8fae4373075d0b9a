// Package file is the publisher of ENGINE=file sink tables: each epoch's
// rows as files in a directory tree (NDJSON, CSV or Parquet), partitioned
// by the values of columns, committed exactly once (or, at_most_once,
// written at every barrier: Apply).
//
// Two phases. The pre-commit is the runtime's: an epoch's rows are in the
// checkpoint's journal (runtime/extsink.go). The commit, once the
// checkpoint's marker is committed, writes the epoch's files under
// temporary names (a dot first, ".tmp" last: readers that skip hidden
// files never see them), syncs each, renames each to its final name and
// syncs its directory, and then records the epoch as committed in the
// progress file <path>/_streamsql/<sink>.json (written to a temporary,
// synced, renamed, the directory synced). A file's final name is made of
// the sink, the epoch, the partition and the part number:
//
//	<path>/<col>=<value>/.../part-<sink>-<epoch:20>-<part:4>.<format>
//
// (a level of partition_by without a name is the value alone)
// and an epoch's rows (read again from the same journal) always make the
// same files, so committing an epoch again after a crash is idempotent: a
// file whose final name exists is done (it was renamed whole), the others
// are written again. Open deletes the sink's orphan temporaries.
//
// at_most_once (Apply): each barrier's rows are written at once, the same
// way (temporaries synced, renamed, directories synced), with no journal
// and no progress file; the files of one write are named by a sequence
// in place of the epoch, the write's time in nanoseconds (above the last
// one this publisher used), so that no write, after a restart either,
// replaces a file. What was not renamed at a crash is an orphan
// temporary, deleted by Open: lost, never written twice (the runtime
// neither retries a failed write nor repeats a replayed one).
package file

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/streamsql/streamsql/internal/fault"
	"github.com/streamsql/streamsql/planner/plan"
	"github.com/streamsql/streamsql/runtime/op"
	"github.com/streamsql/streamsql/runtime/sink"
)

// ProgressDir is the directory of progress files under a sink's path.
const ProgressDir = "_streamsql"

// maxFileBytes is the size after which an epoch's partition goes on in a
// next part file.
const maxFileBytes = 64 << 20

// Publisher writes a file sink's epochs.
type Publisher struct {
	spec     sink.Spec
	dir      string // the sink's directory
	format   string
	part     []op.Eval // partition_by, compiled
	env      op.Env
	id       string // the sink's name in file names: a hash of Spec.SinkID
	progress string // the progress file

	committed  uint64 // the last epoch committed (Committed, CommitEpoch)
	atMostOnce bool
	lastSeq    uint64 // the sequence of the last at_most_once write (Apply)
	enc        encoder
	dirBuf     []byte
	maxBytes   int
	// point is called at each crash point (fault.PointIn; tests replace it).
	point func(name string)
}

var _ sink.Publisher = (*Publisher)(nil)

// Resolve is where the path of a file table is: an absolute path as it
// is (cleaned), a relative one under filesDir (the data directory's
// files/). The planner refused relative paths with ".." (planner/filetable.go).
func Resolve(path, filesDir string) (string, error) {
	if filepath.IsAbs(path) {
		return filepath.Clean(path), nil
	}
	p := filepath.Join(filesDir, path)
	if !strings.HasPrefix(p, filepath.Clean(filesDir)+string(filepath.Separator)) {
		return "", fmt.Errorf("path %q leaves the data directory's files/ directory", path)
	}
	return p, nil
}

// New makes the publisher of spec; relative paths are under filesDir. It
// touches no file (Open does). Its errors are permanent.
func New(spec sink.Spec, filesDir string) (*Publisher, error) {
	amo := spec.Attrs["delivery"] == "at_most_once"
	if !spec.ExactlyOnce && !amo {
		return nil, sink.Permanent("sink table %s: file sinks are exactly_once or at_most_once", spec.Table)
	}
	dir, err := Resolve(spec.Attrs["path"], filesDir)
	if err != nil {
		return nil, sink.Permanent("sink table %s: %v", spec.Table, err)
	}
	p := &Publisher{spec: spec, dir: dir, format: spec.Attrs["format"], maxBytes: maxFileBytes, atMostOnce: amo,
		point: func(name string) { fault.PointIn(name, "file") }}
	if p.format == "" {
		p.format = "ndjson"
	}
	switch p.format {
	case "ndjson", "csv", "parquet":
	default:
		return nil, sink.Permanent("sink table %s: unknown file format %q", spec.Table, p.format)
	}
	if len(spec.PartitionNames) != len(spec.Partition) {
		return nil, sink.Permanent("sink table %s: %d partition names for %d partitions", spec.Table, len(spec.PartitionNames), len(spec.Partition))
	}
	// Compiled once; partition_by is a function of the row (the planner
	// refuses PROCTIME() and the like), so a re-commit makes the same files.
	if p.part, err = op.CompileAll(spec.Partition, &p.env); err != nil {
		return nil, sink.Permanent("sink table %s: partition_by: %v", spec.Table, err)
	}
	h := sha256.Sum256([]byte(spec.SinkID))
	p.id = hex.EncodeToString(h[:8])
	p.progress = filepath.Join(dir, ProgressDir, p.id+".json")
	p.enc.cols = spec.Columns
	return p, nil
}

// Dir is the sink's directory.
func (p *Publisher) Dir() string { return p.dir }

// Open makes the sink's directory and deletes the sink's orphan
// temporaries (files of an epoch whose commit a crash cut short: that
// epoch is committed again, from the journal).
func (p *Publisher) Open(ctx context.Context) error {
	if st, err := os.Stat(p.dir); err == nil && !st.IsDir() {
		return sink.Permanent("sink table %s: path %s is a file, not a directory", p.spec.Table, p.dir)
	}
	if err := os.MkdirAll(filepath.Join(p.dir, ProgressDir), 0o755); err != nil {
		return fmt.Errorf("sink table %s: %w", p.spec.Table, err)
	}
	prefix := ".part-" + p.id + "-"
	err := filepath.WalkDir(p.dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		n := d.Name()
		if !d.IsDir() && strings.HasSuffix(n, ".tmp") && (strings.HasPrefix(n, prefix) || n == "."+p.id+".json.tmp") {
			if err := os.Remove(path); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("sink table %s: deleting orphan temporaries under %s: %w", p.spec.Table, p.dir, err)
	}
	return nil
}

// progressRecord is the progress file: the last epoch committed and its
// files (relative to the sink's directory).
type progressRecord struct {
	SinkID string   `json:"sink_id"`
	Epoch  uint64   `json:"epoch"`
	Files  []string `json:"files"`
}

// Committed reads the progress file (none: 0).
func (p *Publisher) Committed(ctx context.Context) (uint64, error) {
	b, err := os.ReadFile(p.progress)
	if errors.Is(err, fs.ErrNotExist) {
		p.committed = 0
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	var r progressRecord
	if err := json.Unmarshal(b, &r); err != nil {
		return 0, sink.Permanent("sink table %s: progress file %s: %v", p.spec.Table, p.progress, err)
	}
	if r.SinkID != p.spec.SinkID {
		return 0, sink.Permanent("sink table %s: progress file %s is sink %q's, not %q's", p.spec.Table, p.progress, r.SinkID, p.spec.SinkID)
	}
	p.committed = r.Epoch
	return r.Epoch, nil
}

// file is one file of an epoch: its directory (relative) and name, and
// its bytes.
type file struct {
	dir, name string
	data      []byte
}

// CommitEpoch writes epoch's rows as files and records the epoch.
func (p *Publisher) CommitEpoch(ctx context.Context, epoch uint64, changes []sink.Change) error {
	if epoch <= p.committed {
		return sink.ErrCommitted
	}
	files, err := p.place(ctx, epoch, changes)
	if err != nil {
		return err
	}
	rec := progressRecord{SinkID: p.spec.SinkID, Epoch: epoch, Files: make([]string, len(files))}
	for i, f := range files {
		rec.Files[i] = filepath.ToSlash(filepath.Join(f.dir, f.name))
	}
	b, err := json.Marshal(rec)
	if err != nil {
		return sink.Permanent("sink table %s: progress record: %v", p.spec.Table, err)
	}
	tmp := filepath.Join(p.dir, ProgressDir, "."+p.id+".json.tmp")
	if err := writeSynced(tmp, b); err != nil {
		return err
	}
	if err := os.Rename(tmp, p.progress); err != nil {
		return err
	}
	if err := syncDir(filepath.Join(p.dir, ProgressDir)); err != nil {
		return err
	}
	p.committed = epoch
	p.point("sink.after_commit")
	return nil
}

// place writes the files of epoch's rows (seq's, at_most_once) and
// returns them: phase one, every file not yet in place under a temporary
// name, synced, one file's bytes in memory at a time; phase two, the
// renames, each directory synced.
func (p *Publisher) place(ctx context.Context, epoch uint64, changes []sink.Change) ([]file, error) {
	var files, todo []file
	err := p.files(epoch, changes, func(f file) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		data := f.data
		f.data = nil
		files = append(files, f)
		final := filepath.Join(p.dir, f.dir, f.name)
		if _, err := os.Lstat(final); err == nil {
			return nil // renamed whole by an earlier attempt at this epoch
		}
		if err := os.MkdirAll(filepath.Join(p.dir, f.dir), 0o755); err != nil {
			return err
		}
		if err := writeSynced(filepath.Join(p.dir, f.dir, "."+f.name+".tmp"), data); err != nil {
			return err
		}
		todo = append(todo, f)
		return nil
	})
	if err != nil {
		return nil, err
	}
	p.point("sink.before_commit")
	for _, f := range todo {
		d := filepath.Join(p.dir, f.dir)
		if err := os.Rename(filepath.Join(d, "."+f.name+".tmp"), filepath.Join(d, f.name)); err != nil {
			return nil, err
		}
		if err := syncDir(d); err != nil {
			return nil, err
		}
		p.point("sink.after_rename")
	}
	if len(todo) > 0 {
		// New partition directories are entries of their parents.
		if err := syncParents(p.dir, todo); err != nil {
			return nil, err
		}
	}
	return files, nil
}

// files lays epoch's rows out as files, passed to emit one by one: by
// partition (in the order of their first rows), each split into parts of
// about maxBytes.
func (p *Publisher) files(epoch uint64, changes []sink.Change, emit func(file) error) error {
	type partRows struct {
		dir  string
		rows []int
	}
	byPart := map[string]int{}
	var parts []partRows
	dirBuf := p.dirBuf[:0]
	for i, ch := range changes {
		if ch.Row == nil {
			return sink.Permanent("sink table %s: a delete in an append-only file sink", p.spec.Table)
		}
		if len(ch.Row) != len(p.spec.Columns) {
			return sink.Permanent("sink table %s: a row of %d values, the table has %d columns", p.spec.Table, len(ch.Row), len(p.spec.Columns))
		}
		dirBuf = dirBuf[:0]
		for j, f := range p.part {
			if j > 0 {
				dirBuf = append(dirBuf, '/')
			}
			dirBuf = p.enc.appendPartition(dirBuf, p.spec.PartitionNames[j], f(ch.Row))
		}
		k, ok := byPart[string(dirBuf)]
		if !ok {
			k = len(parts)
			byPart[string(dirBuf)] = k
			parts = append(parts, partRows{dir: string(dirBuf)})
		}
		parts[k].rows = append(parts[k].rows, i)
	}
	p.dirBuf = dirBuf
	for _, pr := range parts {
		d, rows := pr.dir, pr.rows
		for n := 0; len(rows) > 0; n++ {
			data, used, err := p.enc.encode(p.format, changes, rows, p.maxBytes)
			if err != nil {
				return sink.Permanent("sink table %s: %v", p.spec.Table, err)
			}
			rows = rows[used:]
			if err := emit(file{dir: filepath.FromSlash(d), name: fmt.Sprintf("part-%s-%020d-%04d.%s", p.id, epoch, n, p.format), data: data}); err != nil {
				return err
			}
		}
	}
	return nil
}

// Apply is at_most_once delivery: changes are written as new files at
// once, named by a sequence that never repeats (the package comment), with
// no progress record. File sinks have no at_least_once (the planner
// refuses it): a write repeated would be a second copy of its rows.
func (p *Publisher) Apply(ctx context.Context, changes []sink.Change) error {
	if !p.atMostOnce {
		return sink.Permanent("sink table %s: Apply on an exactly_once file sink", p.spec.Table)
	}
	if len(changes) == 0 {
		return nil
	}
	p.lastSeq = max(uint64(time.Now().UnixNano()), p.lastSeq+1)
	_, err := p.place(ctx, p.lastSeq, changes)
	return err
}

// Close releases nothing: no file stays open between calls.
func (p *Publisher) Close() {}

// writeSynced writes data to path (created or truncated) and syncs it.
func writeSynced(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// syncDir syncs directory d, so the entries renamed or made in it last.
func syncDir(d string) error {
	f, err := os.Open(d)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// syncParents syncs every directory between root and the files'
// directories (exclusive), deepest first: a partition directory made by
// this epoch is an entry of its parent.
func syncParents(root string, files []file) error {
	seen := map[string]bool{}
	var dirs []string
	for _, f := range files {
		for d := f.dir; d != "." && d != ""; d = filepath.Dir(d) {
			parent := filepath.Dir(d)
			if !seen[parent] {
				seen[parent] = true
				dirs = append(dirs, parent)
			}
		}
	}
	sort.Slice(dirs, func(i, j int) bool { return len(dirs[i]) > len(dirs[j]) })
	for _, d := range dirs {
		if err := syncDir(filepath.Join(root, d)); err != nil {
			return err
		}
	}
	return nil
}

// appendPartition appends the directory name of value v of partition
// col: col=value (the value alone when col is ""), the value escaped so that distinct values make
// distinct names that are one path element: '/', '\', '%', control
// bytes and a leading '.' or '_' as %XX; NULL is __NULL__ and the empty
// string __EMPTY__ (no value escapes to a leading '_'). Names over 200
// bytes are cut and end in a hash of the whole.
func (e *encoder) appendPartition(dst []byte, col string, v plan.Value) []byte {
	start := len(dst)
	if col != "" {
		dst = appendEscaped(dst, col)
		dst = append(dst, '=')
	}
	switch {
	case v.IsNull():
		dst = append(dst, "__NULL__"...)
	case v.K == plan.TypeVarchar && v.S == "":
		dst = append(dst, "__EMPTY__"...)
	case v.K == plan.TypeVarchar:
		dst = appendEscaped(dst, v.S)
	default:
		e.scratch = appendText(e.scratch[:0], v)
		dst = appendEscaped(dst, e.scratch)
	}
	if len(dst)-start > 200 {
		h := sha256.Sum256(dst[start:])
		dst = append(dst[:start+180], '~')
		dst = hex.AppendEncode(dst, h[:8])
	}
	return dst
}

func appendEscaped[S string | []byte](dst []byte, s S) []byte {
	const hexd = "0123456789ABCDEF"
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c == 0x7f || c == '/' || c == '\\' || c == '%' || (i == 0 && (c == '.' || c == '_')) {
			dst = append(dst, '%', hexd[c>>4], hexd[c&15])
			continue
		}
		dst = append(dst, c)
	}
	return dst
}
