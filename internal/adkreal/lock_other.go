//go:build !unix

package adkreal

// lockFile does not lock where flock is missing: two binaries installing
// at once both run npm ci, and the rename keeps the first complete one.
func lockFile(string) (func(), error) { return func() {}, nil }
