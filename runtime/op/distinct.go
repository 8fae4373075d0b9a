package op

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"math"

	"github.com/axiomhq/hyperloglog"
)

// distinctSet is a COUNT(DISTINCT) accumulator's members: their encodings
// (AppendValue), each uvarint-length-prefixed, appended to one arena in
// the order they were first seen, and an open-addressing index of them
// (linear probing; a slot holds 32 bits of the member's hash and its arena
// offset + 1, 0 is empty). It holds no pointers, so the collector never
// traces its members, and a member costs its bytes, one length byte and
// about 11 bytes of index, with no allocation per member.
//
// The arena's order is what the checkpoint uses: the members before done
// are in the set's chunk records (see aggstate.go), the ones after it are
// new since the last snapshot.
type distinctSet struct {
	arena []byte
	slots []uint64
	n     int // members
	// id names the set's chunk records (0: not assigned yet); chunks is
	// how many have been written (0..chunks-1); done the arena offset up
	// to which members are in them.
	id     uint64
	chunks uint32
	done   int
	// sketch is APPROX_COUNT_DISTINCT's HyperLogLog (its set holds no
	// members), sketchBytes its estimated heap (aggs.go). GROUP_CONCAT's
	// entries are members of a set too (aggs.go), never in chunk records.
	sketch      *hyperloglog.Sketch
	sketchBytes int
}

// maxSetArena bounds a set's arena: offsets are 32 bits.
const maxSetArena = math.MaxUint32 - 1

var setSeed = maphash.MakeSeed()

// setHash is the 32 bits of m's hash a slot keeps (never 0, so a slot's
// hash half alone tells a taken slot).
func setHash(m []byte) uint32 {
	h := uint32(maphash.Bytes(setSeed, m))
	if h == 0 {
		h = 1
	}
	return h
}

// member returns the member at arena offset off and the offset after it.
func (s *distinctSet) member(off int) ([]byte, int) {
	l, k := binary.Uvarint(s.arena[off:])
	start := off + k
	return s.arena[start : start+int(l)], start + int(l)
}

// add inserts member m (its bytes are copied) and returns how many bytes
// the set's allocations grew by; an error when the set would outgrow its
// 4 GiB arena.
func (s *distinctSet) add(m []byte) (int, error) {
	grown := 0
	if len(s.slots) == 0 {
		s.slots = make([]uint64, 8)
		grown += 8 * 8
	}
	h := setHash(m)
	mask := uint32(len(s.slots) - 1)
	i := h & mask
	for ; s.slots[i] != 0; i = (i + 1) & mask {
		if uint32(s.slots[i]>>32) == h {
			if got, _ := s.member(int(uint32(s.slots[i])) - 1); bytes.Equal(got, m) {
				return 0, nil
			}
		}
	}
	off := len(s.arena)
	need := binary.MaxVarintLen64 + len(m)
	if off+need > maxSetArena {
		return 0, fmt.Errorf("a COUNT(DISTINCT) set of %d members outgrew the 4 GiB one group's set may hold", s.n)
	}
	before := cap(s.arena)
	s.arena = binary.AppendUvarint(s.arena, uint64(len(m)))
	s.arena = append(s.arena, m...)
	grown += cap(s.arena) - before
	s.slots[i] = uint64(h)<<32 | uint64(off+1)
	s.n++
	if 4*s.n > 3*len(s.slots) {
		grown += s.grow()
	}
	return grown, nil
}

// grow doubles the index (rehashing by the hashes the slots keep) and
// returns the bytes it added.
func (s *distinctSet) grow() int {
	old := s.slots
	s.slots = make([]uint64, 2*len(old))
	mask := uint32(len(s.slots) - 1)
	for _, sl := range old {
		if sl == 0 {
			continue
		}
		i := uint32(sl>>32) & mask
		for s.slots[i] != 0 {
			i = (i + 1) & mask
		}
		s.slots[i] = sl
	}
	return 8 * (len(s.slots) - len(old))
}

// addAll inserts o's members, in o's order, and returns the bytes the set
// grew by.
func (s *distinctSet) addAll(o *distinctSet) (int, error) {
	grown := 0
	for off := 0; off < len(o.arena); {
		var m []byte
		m, off = o.member(off)
		g, err := s.add(m)
		if err != nil {
			return grown, err
		}
		grown += g
	}
	return grown, nil
}

// addEncoded inserts the members encoded in b (uvarint length, bytes; as
// the arena holds them) and returns the bytes the set grew by.
func (s *distinctSet) addEncoded(b []byte) (int, error) {
	grown := 0
	for len(b) > 0 {
		l, k := binary.Uvarint(b)
		if k <= 0 || uint64(len(b)-k) < l {
			return grown, fmt.Errorf("bad set member")
		}
		g, err := s.add(b[k : k+int(l)])
		if err != nil {
			return grown, err
		}
		grown += g
		b = b[k+int(l):]
	}
	return grown, nil
}

// size is the bytes the set's allocations take (its struct included).
func (s *distinctSet) size() int {
	if s == nil {
		return 0
	}
	return distinctSetCost + cap(s.arena) + 8*cap(s.slots) + s.sketchBytes
}

// distinctSetCost is the heap size of a distinctSet struct (its size
// class; TestDistinctSetCost checks it).
const distinctSetCost = 96

// len is the number of members (0 for a nil set).
func (s *distinctSet) len() int {
	if s == nil {
		return 0
	}
	return s.n
}
