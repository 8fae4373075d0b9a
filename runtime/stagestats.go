package runtime

// StageStat is what one stage of a running query has done, for the
// console's operator graph.
type StageStat struct {
	Stage int
	// Rows[k] is how many rows reached plan operator k of the stage (a
	// source: the rows it read); RowsOut is how many it sent on to the
	// next stages (0 when it ends in a sink).
	Rows    []int64
	RowsOut int64
	// QueueFill is how full the stage's input queues are, from 0 to 1
	// (averaged over its tasks' inputs): near 1, its producers block, so
	// the stage is what backpressures the query.
	QueueFill float64
}

// StageStats reports each stage's figures, in the graph's vertex order.
func (j *Job) StageStats() []StageStat {
	out := make([]StageStat, len(j.Graph.Vertices))
	at := map[int]int{}
	for i, v := range j.Graph.Vertices {
		out[i] = StageStat{Stage: v.ID, Rows: make([]int64, len(v.Ops))}
		at[v.ID] = i
	}
	add := func(b *taskBase) {
		s := &out[at[b.stage]]
		rows := b.chain.rows
		if b.planOff == 1 && len(s.Rows) > 0 {
			s.Rows[0] += rows[0].Load() // the rows the source read
		}
		for p := range rows {
			k := b.planOff + p
			switch {
			case k < len(s.Rows):
				s.Rows[k] += rows[p].Load()
			case p == len(rows)-1:
				s.RowsOut += rows[p].Load()
			}
		}
	}
	for _, src := range j.sources {
		add(&src.taskBase)
	}
	used, capacity := make([]int, len(out)), make([]int, len(out))
	for _, t := range j.tasks {
		add(&t.taskBase)
		i := at[t.stage]
		for _, q := range t.mb.queues {
			used[i] += len(q)
			capacity[i] += cap(q)
		}
	}
	for i := range out {
		if capacity[i] > 0 {
			out[i].QueueFill = float64(used[i]) / float64(capacity[i])
		}
	}
	return out
}

// RestoreProgress is how many of the job's tasks have loaded their state,
// of how many (equal once it runs).
func (j *Job) RestoreProgress() (done, total int) {
	total = len(j.sources) + len(j.tasks)
	return total - int(j.toRestore.Load()), total
}
