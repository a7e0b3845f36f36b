package watchdog

import "container/heap"

// dueQueue orders entries by their next renewal time (a min-heap).
type dueQueue []*Entry

func (q dueQueue) Len() int           { return len(q) }
func (q dueQueue) Less(i, j int) bool { return q[i].due.Before(q[j].due) }
func (q dueQueue) Swap(i, j int) {
	q[i], q[j] = q[j], q[i]
	q[i].index, q[j].index = i, j
}

func (q *dueQueue) Push(x any) {
	e := x.(*Entry)
	e.index = len(*q)
	*q = append(*q, e)
}

func (q *dueQueue) Pop() any {
	old := *q
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*q = old[:len(old)-1]
	e.index = -1
	return e
}

func (q *dueQueue) remove(e *Entry) {
	heap.Remove(q, e.index)
}
