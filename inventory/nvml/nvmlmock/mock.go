package nvmlmock

import (
	"crypto/sha1"
	"errors"
	"fmt"
	"slices"
	"strings"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxa100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxb200"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh200"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"
)

var servers = map[string]func() *server.Server{
	"dgxa100": dgxa100.New,
	"dgxh100": dgxh100.New,
	"dgxh200": dgxh200.New,
	"dgxb200": dgxb200.New,
}

// Names lists the mock servers New knows, sorted.
func Names() []string {
	var names []string
	for n := range servers {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// ErrUnknownMock is wrapped by New for a name not in Names.
var ErrUnknownMock = errors.New("unknown mock server")

// New returns the named mock server, initialised-ready (its Init succeeds),
// with stable UUIDs ("GPU-" and a UUID derived from the server name and GPU
// index) and GetPciInfo returning the mock's bus ID in BusId, in NVML's form
// with an eight-digit domain. The mocks do not model NUMA affinity: their
// GetNumaNodeId answers ERROR_NOT_SUPPORTED, as NVML does on a system that
// reports none, so discovery leaves the NUMA node absent instead of
// reporting an unimplemented call.
func New(name string) (*server.Server, error) {
	mk, ok := servers[name]
	if !ok {
		return nil, fmt.Errorf("%w %q (known: %s)", ErrUnknownMock, name, strings.Join(Names(), ", "))
	}
	s := mk()
	for _, d := range s.Devices {
		dev := d.(*server.Device)
		dev.UUID = "GPU-" + stableUUID(name, dev.Index)
		// NVML writes the bus ID with an eight-digit domain
		// ("00000000:07:00.0"); the mock holds the four-digit form.
		busID := "0000" + dev.PciBusID
		dev.GetPciInfoFunc = func() (gonvml.PciInfo, gonvml.Return) {
			p := gonvml.PciInfo{PciDeviceId: dev.Config.PciDeviceId}
			for i := 0; i < len(busID) && i < len(p.BusId)-1; i++ {
				p.BusId[i] = int8(busID[i])
			}
			return p, gonvml.SUCCESS
		}
		dev.GetNumaNodeIdFunc = func() (int, gonvml.Return) { return 0, gonvml.ERROR_NOT_SUPPORTED }
	}
	return s, nil
}

// stableUUID formats a SHA-1 of name and index as a version-5-style UUID.
func stableUUID(name string, index int) string {
	h := sha1.Sum(fmt.Appendf(nil, "%s/%d", name, index))
	h[6] = h[6]&0x0f | 0x50
	h[8] = h[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", h[0:4], h[4:6], h[6:8], h[8:10], h[10:16])
}
