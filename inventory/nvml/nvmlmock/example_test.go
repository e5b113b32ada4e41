package nvmlmock_test

import (
	"fmt"

	"github.com/dralloc/dralloc/inventory/nvml/nvmlmock"
)

func ExampleNames() {
	fmt.Println(nvmlmock.Names())
	// Output: [dgxa100 dgxb200 dgxh100 dgxh200]
}

func ExampleNew() {
	s, err := nvmlmock.New("dgxb200")
	if err != nil {
		panic(err)
	}
	n, _ := s.DeviceGetCount()
	d, _ := s.DeviceGetHandleByIndex(3)
	uuid1, _ := d.GetUUID()
	again, _ := nvmlmock.New("dgxb200")
	d2, _ := again.DeviceGetHandleByIndex(3)
	uuid2, _ := d2.GetUUID()
	pci, _ := d.GetPciInfo()
	bus := ""
	for _, c := range pci.BusId {
		if c == 0 {
			break
		}
		bus += string(rune(c))
	}
	fmt.Println(n, uuid1 == uuid2, bus)
	_, err = nvmlmock.New("dgx-nope")
	fmt.Println(err)
	// Output:
	// 8 true 00000000:03:00.0
	// unknown mock server "dgx-nope" (known: dgxa100, dgxb200, dgxh100, dgxh200)
}
