package claim

import "testing"

// TestUnderKeepsPathsInTheirRoot: the second line behind the name checks refuses any path that is not
// a clean path strictly inside its root, including one that merely starts with the root's name.
func TestUnderKeepsPathsInTheirRoot(t *testing.T) {
	for _, tc := range []struct {
		root, path string
		ok         bool
	}{
		{MetadataHostDir, MetadataHostDir + "/ns_c/gpu/metadata.json", true},
		{MetadataContainerDir, MetadataContainerDir + "/resourceclaims/c/gpu/d-metadata.json", true},
		{MetadataHostDir, "../../etc/metadata.json", false},
		{MetadataHostDir, MetadataHostDir + "/../etc", false},
		{MetadataHostDir, MetadataHostDir, false},
		{MetadataHostDir, MetadataHostDir + "-other/x", false},
		{MetadataContainerDir, "/etc/passwd", false},
		{MetadataContainerDir, MetadataContainerDir + "//x", false},
	} {
		if err := under(tc.root, tc.path); (err == nil) != tc.ok {
			t.Errorf("under(%q, %q) = %v, want ok %v", tc.root, tc.path, err, tc.ok)
		}
	}
}
