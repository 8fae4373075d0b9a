package op

import "slices"

// Binary min-heaps kept in slices, typed: container/heap's interface
// boxes every element pushed (an allocation per window an aggregation
// opens, per row a join holds). less orders the elements.

func heapPush[T any](h []T, x T, less func(a, b T) bool) []T {
	h = append(h, x)
	for i := len(h) - 1; i > 0; {
		p := (i - 1) / 2
		if !less(h[i], h[p]) {
			break
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
	return h
}

// heapPop removes the first element and returns it. A heap fallen to a
// quarter of its array moves to a smaller one: a burst of held rows does
// not keep its peak's memory.
func heapPop[T any](h []T, less func(a, b T) bool) (T, []T) {
	top := h[0]
	n := len(h) - 1
	h[0] = h[n]
	var zero T
	h[n] = zero
	h = h[:n]
	heapDown(h, 0, less)
	if cap(h) > 1024 && 4*len(h) < cap(h) {
		h = slices.Clone(h)
	}
	return top, h
}

func heapDown[T any](h []T, i int, less func(a, b T) bool) {
	for {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		m := l
		if r := l + 1; r < len(h) && less(h[r], h[l]) {
			m = r
		}
		if !less(h[m], h[i]) {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

// heapInit orders a heap built by appending.
func heapInit[T any](h []T, less func(a, b T) bool) {
	for i := len(h)/2 - 1; i >= 0; i-- {
		heapDown(h, i, less)
	}
}
