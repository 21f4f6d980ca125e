package sandbox

// Bounds on what wrun keeps of the denials of one run. Every denial is the
// child's doing, and the child can make as many as it likes (a loop
// touching distinct paths): kept without bound they cost wrun memory and
// time (about 115 KB each, most of it in the escalation request's
// alternatives). wrun keeps the first MaxDenials distinct denials exactly,
// counts repeats of those, and only counts everything beyond: a new
// distinct denial past the limit, or one whose path or address is longer
// than MaxDenialPath bytes. Hitting a bound is reported (Result's
// DenialsDropped, a warning), never fatal.
const (
	MaxDenials    = 1000
	MaxDenialPath = 1024
)

// DenialLog collects the denials of one run within the bounds. The zero
// value is ready to use; it is not safe for concurrent use.
type DenialLog struct {
	index   map[string]int
	list    []Denial
	dropped int
}

// DenialKey is what makes two denials the same one: the operation, the path
// or address and the missing right.
func DenialKey(d Denial) string {
	return d.Op + "\x00" + d.Path + "\x00" + d.Addr + "\x00" + d.Right
}

// Add records d (Count 0 counts as 1), or counts it as a repeat of the same
// denial, or, beyond the bounds, only counts it as dropped. It reports
// whether d was kept or counted as a repeat.
func (l *DenialLog) Add(d Denial) bool {
	n := max(d.Count, 1)
	if len(d.Path) > MaxDenialPath || len(d.Addr) > MaxDenialPath {
		l.dropped += n
		return false
	}
	key := DenialKey(d)
	if i, ok := l.index[key]; ok {
		l.list[i].Count += n
		return true
	}
	if len(l.list) >= MaxDenials {
		l.dropped += n
		return false
	}
	if l.index == nil {
		l.index = map[string]int{}
	}
	d.Count = n
	l.index[key] = len(l.list)
	l.list = append(l.list, d)
	return true
}

// Find returns the kept denial with key, or nil. The pointer is valid until
// the next Add.
func (l *DenialLog) Find(key string) *Denial {
	if i, ok := l.index[key]; ok {
		return &l.list[i]
	}
	return nil
}

// Len is the number of distinct denials kept.
func (l *DenialLog) Len() int { return len(l.list) }

// Denials returns the kept denials, in the order first seen. The slice is
// the log's own: change an element to mark it (Audited), not its key.
func (l *DenialLog) Denials() []Denial { return l.list }

// Dropped is how many denials (occurrences) were counted beyond the bounds.
func (l *DenialLog) Dropped() int { return l.dropped }

// AddDropped counts n more denials dropped elsewhere (by an earlier log).
func (l *DenialLog) AddDropped(n int) { l.dropped += n }

// BoundDenials returns ds within the bounds and how many occurrences it
// dropped.
func BoundDenials(ds []Denial) ([]Denial, int) {
	var l DenialLog
	for _, d := range ds {
		l.Add(d)
	}
	return l.Denials(), l.Dropped()
}
