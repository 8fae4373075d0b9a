package op

// What operator state costs in memory: the helpers behind StateBytes (an
// estimate of the heap an operator's state takes, kept up to date by
// integer adds where state is created, grows or is dropped, never by
// walking it) and behind keeping that heap proportional to the live state.

// sizeClasses are the Go allocator's small size classes (runtime/sizeclasses.go).
var sizeClasses = [...]int{8, 16, 24, 32, 48, 64, 80, 96, 112, 128, 144, 160, 176, 192, 208, 224, 240, 256,
	288, 320, 352, 384, 416, 448, 480, 512, 576, 640, 704, 768, 896, 1024, 1152, 1280, 1408, 1536, 1792,
	2048, 2304, 2688, 3072, 3200, 3456, 4096, 4864, 5376, 6144, 6528, 6784, 6912, 8192, 9472, 9728,
	10240, 10880, 12288, 13568, 14336, 16384, 18432, 19072, 20480, 21760, 24576, 27264, 28672, 32768}

// allocSize is what an allocation of n bytes takes on the heap: its size
// class, or whole pages beyond the largest.
func allocSize(n int) int {
	if n <= 0 {
		return 0
	}
	if n > sizeClasses[len(sizeClasses)-1] {
		return (n + 8191) &^ 8191
	}
	lo, hi := 0, len(sizeClasses)-1
	for lo < hi {
		mid := (lo + hi) / 2
		if sizeClasses[mid] < n {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return sizeClasses[lo]
}

// shrink reports whether a map that has n entries, having had *peak at
// its largest, should be rebuilt (rebuilt): a Go map keeps the table of
// its largest size, so a map that grew to a million entries and fell to a
// thousand would still hold the million's memory. It resets *peak when it
// says yes. Rebuilding at a quarter of the peak costs O(1) per delete.
func shrink(n int, peak *int) bool {
	if *peak <= 1024 || 4*n >= *peak {
		return false
	}
	*peak = n
	return true
}

// rebuilt copies m into a new map sized for its entries.
func rebuilt[K comparable, V any](m map[K]V) map[K]V {
	out := make(map[K]V, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
