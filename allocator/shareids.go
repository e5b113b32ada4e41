package allocator

import (
	"fmt"

	"k8s.io/apimachinery/pkg/types"
)

// maxShareIDDraws is how often a share ID is drawn for one allocation before a source that keeps
// repeating IDs already used on the device is reported as invalid input. Random UUIDs never need a
// second draw in practice; a source that repeats itself this often is broken.
const maxShareIDDraws = 16

// newShareID draws the share ID of a new share of device d: from Options.ShareIDs, or a random UUID as
// Kubernetes does. Share IDs tell apart the allocations of one device, so a drawn ID that an allocated
// claim or an earlier result of this call already holds on d is drawn again, up to maxShareIDDraws times;
// then the allocation fails with an invalid-input error naming Options.ShareIDs.
func (a *allocation) newShareID(d *deviceEntry) (string, error) {
	var last string
	for range maxShareIDDraws {
		var id types.UID
		if a.s.opts.ShareIDs != nil {
			id = a.s.opts.ShareIDs()
		} else {
			id = randomUID()
		}
		if !a.shareIDUsed(d, string(id)) {
			return string(id), nil
		}
		last = string(id)
	}
	return "", inputError("Options.ShareIDs", "", fmt.Errorf(
		"returned share IDs already used on device %s %d times in a row (last %q): share IDs must be unique per device",
		d.id, maxShareIDDraws, last))
}

// shareIDUsed reports whether an allocated claim or a result of this call holds a share of d with this ID.
func (a *allocation) shareIDUsed(d *deviceEntry, id string) bool {
	if ids := a.st.shareIDs[d.id]; ids != nil && ids[types.UID(id)] > 0 {
		return true
	}
	for i := range a.perClaim {
		for _, r := range a.perClaim[i].results {
			if r.dev == d && r.shareID != nil && *r.shareID == id {
				return true
			}
		}
	}
	return false
}
