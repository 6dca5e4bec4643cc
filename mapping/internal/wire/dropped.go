package wire

import "slices"

// AddDropped adds what to a list of what a translation dropped, unless it
// is there already.
func AddDropped(list []string, what string) []string {
	if slices.Contains(list, what) {
		return list
	}
	return append(list, what)
}
