package value

// For the tests of package value_test (rows_fuzz_test.go's oracle).
var (
	ParseTimeLayouts = parseTimeLayouts
	ColumnList       = columnList
	IsKey            = isKey
)

// ArenaLen is the bytes in c's scanner's buffer of unescaped strings.
func ArenaLen(c *ChangeDecoder) int { return c.d.j.arena.Len() }
