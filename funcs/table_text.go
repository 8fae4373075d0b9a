package funcs

import "github.com/streamsql/streamsql/planner/plan"

// textFuncs are the registry's rows for the functions of strings.go,
// regexp.go and json.go (registry.go's all puts them after table.go's).
var textFuncs = []*Func{
	{Names: []string{"substring_index"}, MinArgs: 3, MaxArgs: 3, Sig: "SUBSTRING_INDEX(s, delim, count)", Result: fixed(plan.TypeVarchar), Strict: true, Compile: compileSubstringIndex},
	{Names: []string{"locate"}, MinArgs: 2, MaxArgs: 3, Sig: "LOCATE(sub, s[, pos])", Result: fixed(plan.TypeBigint), Strict: true, Compile: compileLocate},
	{Names: []string{"split_index"}, MinArgs: 3, MaxArgs: 3, Sig: "SPLIT_INDEX(s, delim, index)", Result: fixed(plan.TypeVarchar), Strict: true, Compile: compileSplitIndex},
	{Names: []string{"truncate"}, MinArgs: 2, MaxArgs: 2, Sig: "TRUNCATE(x, d)", Result: numericResult, Strict: true, Compile: compileRoundTo(true)},
	{Names: []string{"regexp_like"}, MinArgs: 2, MaxArgs: 3, Sig: "REGEXP_LIKE(s, pattern[, match_type]), s REGEXP pattern", Result: fixed(plan.TypeBoolean),
		Bind: bindRE(reLayout{pat: 1, flags: 2}, -1, -1), Strict: true, Compile: compileRegexpLike},
	{Names: []string{"regexp_instr"}, MinArgs: 2, MaxArgs: 6, Sig: "REGEXP_INSTR(s, pattern[, pos[, occurrence[, return_option[, match_type]]]])", Result: fixed(plan.TypeBigint),
		Bind: bindRE(reLayout{pat: 1, flags: 5}, 2, 4), Strict: true, Compile: compileRegexpInstr},
	{Names: []string{"regexp_substr"}, MinArgs: 2, MaxArgs: 5, Sig: "REGEXP_SUBSTR(s, pattern[, pos[, occurrence[, match_type]]])", Result: fixed(plan.TypeVarchar),
		Bind: bindRE(reLayout{pat: 1, flags: 4}, 2, -1), Strict: true, Compile: compileRegexpSubstr},
	{Names: []string{"regexp_replace"}, MinArgs: 3, MaxArgs: 6, Sig: "REGEXP_REPLACE(s, pattern, repl[, pos[, occurrence[, match_type]]])", Result: fixed(plan.TypeVarchar),
		Bind: bindRegexpReplace, Strict: true, Compile: compileRegexpReplace},
	{Names: []string{"regexp_extract"}, MinArgs: 2, MaxArgs: 3, Sig: "REGEXP_EXTRACT(s, pattern[, group])", Result: fixed(plan.TypeVarchar),
		Bind: bindRegexpExtract, Strict: true, Compile: compileRegexpExtract},
	{Names: []string{"json_extract"}, MinArgs: 2, MaxArgs: 2, Sig: "JSON_EXTRACT(json, path), json->path", Result: fixed(plan.TypeVarchar),
		Bind: bindJSONExtract, Strict: true, Compile: compileJSONExtract},
	{Names: []string{"json_unquote"}, MinArgs: 1, MaxArgs: 1, Sig: "JSON_UNQUOTE(s), json->>path", Result: fixed(plan.TypeVarchar), Strict: true, Compile: compileJSONUnquote},
}
