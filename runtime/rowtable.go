package runtime

import (
	"hash/maphash"
	"unsafe"
)

// rowTable holds encoded rows by key (a results shard's latest rows) with
// nothing for the garbage collector to trace per row: keys and rows live in
// large byte chunks, entries in a slice of offsets, and the index maps a
// key's hash to its entry. A long-running windowed query keeps millions of
// result rows; as a map of strings each was two objects the collector
// marked at every cycle, which came to a third of such a query's CPU.
//
// Keys whose hashes collide go to a small map of strings (coll), and the
// index marks their hash with -1. A changed row is rewritten in place when
// its encoding has the same length, else appended; chunks are compacted
// when more than half their bytes are dead. The first chunk starts small
// and doubles (copied: entries keep their offsets) up to rowChunkSize, so
// a query with a handful of result rows holds a few KiB, not a megabyte
// (a server may run thousands of such views). Not safe for concurrent use
// (Results guards it).
type rowTable struct {
	hash   func(key string) uint64
	index  map[uint64]int32
	coll   map[string]int32
	ents   []rowEnt
	free   []int32
	chunks [][]byte
	live   int // bytes of live keys and rows
	dead   int // bytes of replaced or deleted ones
}

// rowEnt locates an entry's key and row: chunk -1 marks a free entry.
type rowEnt struct {
	chunk      int32
	off        uint32
	klen, vlen uint32
}

// rowChunkSize is the size of full chunks, rowChunkMin the first chunk's.
const (
	rowChunkSize = 1 << 20
	rowChunkMin  = 1 << 10
)

func newRowTable() *rowTable {
	seed := maphash.MakeSeed()
	return &rowTable{hash: func(k string) uint64 { return maphash.String(seed, k) }, index: map[uint64]int32{}, coll: map[string]int32{}}
}

func (t *rowTable) len() int { return len(t.ents) - len(t.free) }

func (t *rowTable) key(e rowEnt) []byte {
	return t.chunks[e.chunk][e.off : e.off+e.klen]
}

func (t *rowTable) row(e rowEnt) []byte {
	return t.chunks[e.chunk][e.off+e.klen : e.off+e.klen+e.vlen]
}

// lookup returns key's entry.
func (t *rowTable) lookup(key string, h uint64) (int32, bool) {
	id, ok := t.index[h]
	switch {
	case !ok:
		return -1, false
	case id >= 0:
		return id, string(t.key(t.ents[id])) == key
	}
	id, ok = t.coll[key]
	return id, ok
}

// set makes row (copied) key's row.
func (t *rowTable) set(key string, row []byte) {
	h := t.hash(key)
	if id, ok := t.lookup(key, h); ok {
		e := &t.ents[id]
		if int(e.vlen) == len(row) {
			copy(t.row(*e), row)
			return
		}
		t.live -= int(e.klen + e.vlen)
		t.dead += int(e.klen + e.vlen)
		*e = t.write(key, row)
		t.maybeCompact()
		return
	}
	var id int32
	if n := len(t.free); n > 0 {
		id, t.free = t.free[n-1], t.free[:n-1]
		t.ents[id] = t.write(key, row)
	} else {
		id = int32(len(t.ents))
		t.ents = append(t.ents, t.write(key, row))
	}
	switch old, taken := t.index[h]; {
	case !taken:
		t.index[h] = id
	case old >= 0:
		// Two keys with one hash: both go to coll.
		t.coll[string(t.key(t.ents[old]))] = old
		t.index[h] = -1
		t.coll[key] = id
	default:
		t.coll[key] = id
	}
	t.maybeCompact()
}

// del removes key's row.
func (t *rowTable) del(key string) {
	h := t.hash(key)
	id, ok := t.lookup(key, h)
	if !ok {
		return
	}
	e := &t.ents[id]
	t.live -= int(e.klen + e.vlen)
	t.dead += int(e.klen + e.vlen)
	*e = rowEnt{chunk: -1}
	t.free = append(t.free, id)
	if t.index[h] == id {
		delete(t.index, h)
	} else {
		delete(t.coll, key) // the index keeps -1: lookups fall through to coll
	}
	t.maybeCompact()
}

// write appends key and row to the chunks.
func (t *rowTable) write(key string, row []byte) rowEnt {
	n := len(key) + len(row)
	last := len(t.chunks) - 1
	switch {
	case last >= 0 && len(t.chunks[last])+n <= cap(t.chunks[last]):
	case last >= 0 && cap(t.chunks[last]) < rowChunkSize:
		// A chunk still growing doubles in place.
		old := t.chunks[last]
		c := make([]byte, len(old), max(min(2*cap(old), rowChunkSize), len(old)+n))
		copy(c, old)
		t.chunks[last] = c
	default:
		size := rowChunkSize
		if last < 0 {
			size = rowChunkMin
		}
		t.chunks = append(t.chunks, make([]byte, 0, max(size, n)))
		last++
	}
	c := t.chunks[last]
	off := len(c)
	c = append(append(c, key...), row...)
	t.chunks[last] = c
	t.live += n
	return rowEnt{chunk: int32(last), off: uint32(off), klen: uint32(len(key)), vlen: uint32(len(row))}
}

// maybeCompact copies the live entries into new chunks once most bytes are
// dead.
func (t *rowTable) maybeCompact() {
	if t.dead < rowChunkSize || t.dead < t.live {
		return
	}
	old := t.chunks
	t.chunks, t.live, t.dead = nil, 0, 0
	for i, e := range t.ents {
		if e.chunk < 0 {
			continue
		}
		c := old[e.chunk][e.off : e.off+e.klen+e.vlen]
		t.ents[i] = t.write(unsafe.String(unsafe.SliceData(c), int(e.klen)), c[e.klen:])
	}
}

// each calls fn with every key and row; both are only valid during the
// call, and fn must not change the table.
func (t *rowTable) each(fn func(key, row []byte)) {
	for _, e := range t.ents {
		if e.chunk >= 0 {
			fn(t.key(e), t.row(e))
		}
	}
}
