package op

import (
	"testing"
	"unsafe"
)

// TestDistinctSetCost: the heap a distinctSet struct takes, as the state
// estimate counts it, is its size rounded up to Go's size class.
func TestDistinctSetCost(t *testing.T) {
	size := int(unsafe.Sizeof(distinctSet{}))
	class := size
	for _, c := range []int{8, 16, 24, 32, 48, 64, 80, 96, 112, 128, 144, 160, 176, 192, 208, 224, 240, 256} {
		if c >= size {
			class = c
			break
		}
	}
	if distinctSetCost != class {
		t.Fatalf("distinctSetCost = %d, the struct is %d bytes (size class %d)", distinctSetCost, size, class)
	}
}
