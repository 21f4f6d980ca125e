package policy

import (
	"strings"
	"testing"
)

// FuzzCarve: for any tree (from the fuzzer's bytes) and any holes in it,
// no carved rule grants a withheld right on a hole or beneath it, and no
// path outside the holes loses a right unless it lies on the way down to a
// hole (TestCarveNeverCoversAHole's property, on trees the fuzzer picks).
func FuzzCarve(f *testing.F) {
	f.Add([]byte{3, 2, 1, 0, 2, 1}, uint8(5), uint8(1), uint16(ReadFile))
	f.Add([]byte{1, 1, 1, 1}, uint8(3), uint8(2), uint16(All))
	f.Fuzz(func(t *testing.T, shape []byte, hole1, hole2 uint8, withheld uint16) {
		// Build a tree: each byte is how many children the next directory
		// (in breadth-first order) has, at most 4, at most 40 directories.
		tree := fakeTree{"/": nil}
		queue := []string{"/"}
		all := []string{"/"}
		for i := 0; i < len(shape) && len(queue) > 0 && len(all) < 40; i++ {
			d := queue[0]
			queue = queue[1:]
			for c := 0; c < int(shape[i]%5); c++ {
				name := string(rune('a' + c))
				p := strings.TrimSuffix(d, "/") + "/" + name
				tree[d] = append(tree[d], name)
				tree[p] = nil
				queue = append(queue, p)
				all = append(all, p)
			}
		}
		w := Access(withheld) & All
		if w == 0 {
			w = ReadFile
		}
		holes := []Hole{{Path: all[int(hole1)%len(all)], Withheld: w}}
		if h2 := all[int(hole2)%len(all)]; h2 != holes[0].Path && h2 != "/" {
			holes = append(holes, Hole{Path: h2, Withheld: All})
		}
		if holes[0].Path == "/" {
			return // a hole at the root leaves nothing to carve
		}
		rules, _ := Carve([]Rule{{Path: "/", Access: All}}, holes, tree.list)
		for _, p := range all {
			want := All
			onHolePath := false
			for _, h := range holes {
				if Within(p, h.Path) {
					want &^= h.Withheld
				}
				if Within(h.Path, p) {
					onHolePath = true
				}
			}
			var got Access
			for _, r := range rules {
				if Within(p, r.Path) {
					got |= r.Access
				}
			}
			if got&^want != 0 {
				t.Fatalf("holes %v: %s gets %v beyond %v", holes, p, got&^want, want)
			}
			if !onHolePath && got != want {
				t.Fatalf("holes %v: %s lost %v", holes, p, want&^got)
			}
		}
	})
}
