package queries

import (
	"github.com/streamsql/streamsql/parser"
	"github.com/streamsql/streamsql/planner"
	"github.com/streamsql/streamsql/planner/plan"
)

// Prepared is a statement described without running it (Prepare): what
// PostgreSQL's Describe of a prepared statement answers.
type Prepared struct {
	// ParamTypes are the types of $1, $2, ...: those given, else inferred
	// from where each is used (planner/params.go), else VARCHAR.
	ParamTypes []plan.Type
	// Columns are the result columns of the last statement; nil when it
	// answers without rows.
	Columns plan.Schema
}

// Prepare plans the statements of sql without running them: the types of
// their parameters (types: those given, by $n-1; TypeNull or missing:
// infer it) and the columns of the last one's result. Nothing is created,
// read or changed; a statement that cannot be planned is the error Exec
// would give. SET applies to the statements after it, as in Exec. Of o,
// the session settings, the parameter types and the dialect are used
// (o.Params are not: nothing runs).
func (e *Engine) Prepare(sql string, o ExecOptions) (Prepared, error) {
	stmts, perr := o.Dialect.Parse(sql)
	if perr != nil {
		return Prepared{}, parseError(perr, len(stmts))
	}
	params := planner.PrepareParams(o.ParamTypes)
	set := append([]parser.SetVar(nil), o.Set...)
	var cols plan.Schema
	for i := range stmts {
		st := &stmts[i]
		c, err := e.describeStmt(st, &set, params)
		if err != nil {
			return Prepared{}, e.wrap(st, err)
		}
		cols = c
	}
	params.Settle()
	return Prepared{ParamTypes: params.Types(), Columns: cols}, nil
}

// describeStmt is the result columns of st (nil: none), planned with
// params as exec would plan it.
func (e *Engine) describeStmt(st *parser.Statement, set *[]parser.SetVar, params *planner.Params) (plan.Schema, error) {
	if err := noStoredParams(st); err != nil {
		return nil, err
	}
	switch s := st.Stmt.(type) {
	case *parser.Set:
		opts := e.defaults()
		if err := planner.ApplyOptions(&opts, s.Vars, "SET"); err != nil {
			return nil, err
		}
		*set = append(*set, s.Vars...)
	case *parser.Show:
		if s.Kind == parser.ShowTables {
			return showTablesColumns(), nil
		}
		return showCreateColumns(), nil
	case *parser.Describe:
		return describeColumns(), nil
	case *parser.Explain:
		if s.Name != "" {
			e.mu.RLock()
			_, isView := e.views[s.Name]
			_, isTable := e.tables[s.Name]
			e.mu.RUnlock()
			if isTable && !isView {
				return describeColumns(), nil // EXPLAIN t is DESCRIBE t
			}
			return explainColumns(), nil
		}
		opts := e.defaults()
		if err := planner.ApplyOptions(&opts, *set, "SET"); err != nil {
			return nil, err
		}
		if _, err := planner.Explain(s, e.planCatalog(), opts, params); err != nil {
			return nil, err
		}
		return explainColumns(), nil
	case *parser.Select:
		q, _, err := e.pullPlan(s, st, *set, params)
		if err != nil {
			return nil, err
		}
		return q.Out, nil
	case *parser.CreateTable, *parser.CreateView, *parser.Insert, *parser.Drop:
		return nil, nil
	default:
		return nil, stmtErr(422, st, "unsupported statement")
	}
	return nil, nil
}

// The result columns of SHOW, DESCRIBE and EXPLAIN: the statements answer
// with them and Prepare describes them.

func showTablesColumns() plan.Schema {
	return plan.Schema{{Name: "name", Type: plan.TypeVarchar}, {Name: "type", Type: plan.TypeVarchar}, {Name: "engine", Type: plan.TypeVarchar}}
}

func showCreateColumns() plan.Schema {
	return plan.Schema{{Name: "name", Type: plan.TypeVarchar}, {Name: "sql", Type: plan.TypeVarchar}}
}

func describeColumns() plan.Schema {
	return plan.Schema{{Name: "name", Type: plan.TypeVarchar}, {Name: "type", Type: plan.TypeVarchar},
		{Name: "nullable", Type: plan.TypeBoolean}, {Name: "key", Type: plan.TypeVarchar}}
}

func explainColumns() plan.Schema { return plan.Schema{{Name: "plan", Type: plan.TypeVarchar}} }
