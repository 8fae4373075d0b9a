package runtime

// RestoreProgress is how many of the job's tasks have loaded their state,
// of how many (equal once it runs).
func (j *Job) RestoreProgress() (done, total int) {
	total = len(j.sources) + len(j.tasks)
	return total - int(j.toRestore.Load()), total
}
