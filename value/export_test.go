package value

// For the tests of package value_test (rows_fuzz_test.go's oracle).
var (
	ParseTimeLayouts = parseTimeLayouts
	ColumnList       = columnList
	IsKey            = isKey
)
