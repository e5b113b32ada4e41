package allocator

import (
	"fmt"

	"k8s.io/apimachinery/pkg/types"
)

// maxShareIDDraws is how often a share ID is drawn for one allocation before a source that keeps
// repeating IDs already used on the device is reported as invalid input. Random UUIDs never need a
// second draw in practice; a source that repeats itself this often is broken.
const maxShareIDDraws = 16

// drawShareIDs draws the share IDs of the placement the call returns, in the order of its claims and
// results. Drawing them only here (the search marks each share with pendingShareID) calls
// Options.ShareIDs once per share returned: a source that counts gives the same IDs for the same answer
// however the search reached it, and a broken source fails exactly the calls whose answer holds a share.
func (a *allocation) drawShareIDs() error {
	for ci := range a.claims {
		results := a.perClaim[ci].results
		for i := range results {
			if results[i].shareID != &pendingShareID {
				continue
			}
			id, err := a.newShareID(results[i].dev)
			if err != nil {
				return err
			}
			results[i].shareID = &id
		}
	}
	return nil
}

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
		if !normalizedUUID(string(id)) {
			// The API server refuses any other form in status.allocation (validation of
			// devices.results[].shareID in kubernetes pkg/apis/resource/validation), so such an
			// allocation could never be written.
			return "", inputError("Options.ShareIDs", "", fmt.Errorf(
				"returned share ID %q: must be a UUID in RFC 4122 normalized form with lowercase hexadecimal characters", id))
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

// normalizedUUID reports whether s is a UUID in RFC 4122 normalized form with lowercase hexadecimal
// characters (xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx), the only form of share ID the API server stores.
func normalizedUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
				return false
			}
		}
	}
	return true
}
