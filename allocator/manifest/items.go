package manifest

import (
	"bytes"
	"fmt"
	"runtime"
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"

	k8sruntime "k8s.io/apimachinery/pkg/runtime"
)

// The items of a List are decoded in order, each as a document of its own: what the serializer
// makes of an item's bytes (most of the time of reading a dump in JSON) depends on those bytes
// alone, and what follows (conversion, defaults, validation, Options.Validate, Options.TakeSlice,
// filing the object, expanding a workload) on the items before it. listItems decodes the bytes of
// the next batch of items on other goroutines while the items of this batch are taken in turn, so
// that the answer, errors included, is the one decoding them one after the other gives; at most two
// batches of decoded items are held at once.

// itemBatch is the number of items decoded ahead together.
const itemBatch = 256

// predecoded is an item as the serializer decoded it, or the error of its long exponents; redo
// says that decoding it panicked, so that it is decoded again in the caller's goroutine.
type predecoded struct {
	data      []byte
	obj       k8sruntime.Object
	gvk       *schema.GroupVersionKind
	err, expo error
	redo      bool
}

// listItems decodes the items of a List at src, each with the duplicate keys dups(i) found in it.
// It lets go of each item's bytes once the item is decoded (items[i] = nil).
func (d *decoder) listItems(items [][]byte, src Source, dups func(i int) []string) error {
	at := func(i int) Source {
		isrc := src
		isrc.Item = i + 1
		return isrc
	}
	if runtime.GOMAXPROCS(0) == 1 || len(items) < 2*itemBatch {
		for i := range items {
			if err := d.document(itemBytes(items[i]), at(i), dups(i)...); err != nil {
				return err
			}
			items[i] = nil
		}
		return nil
	}
	start := func(lo int) chan []predecoded {
		ch := make(chan []predecoded, 1) // buffered: a batch no one takes (an error) does not block
		go func() { ch <- predecode(items[lo:min(lo+itemBatch, len(items))]) }()
		return ch
	}
	next := start(0)
	for lo := 0; lo < len(items); lo += itemBatch {
		batch := <-next
		if lo+itemBatch < len(items) {
			next = start(lo + itemBatch)
		}
		for j, p := range batch {
			i := lo + j
			var err error
			switch {
			case p.redo:
				err = d.document(p.data, at(i), dups(i)...)
			case p.expo != nil:
				err = &Error{Source: at(i), Err: fmt.Errorf("%w: %w", ErrDecode, p.expo)}
			default:
				err = d.decoded(p.data, p.obj, p.gvk, p.err, at(i), dups(i))
			}
			if err != nil {
				return err
			}
			batch[j] = predecoded{}
			items[i] = nil
		}
	}
	return nil
}

// itemBytes are the bytes of an item as a RawExtension holds them: nil for null.
func itemBytes(item []byte) []byte {
	if bytes.Equal(item, []byte("null")) {
		return nil
	}
	return item
}

// predecode decodes items as document does before it looks at the objects (long exponents, the
// serializer), on as many goroutines as the machine runs Go code on less the caller's.
func predecode(items [][]byte) []predecoded {
	out := make([]predecoded, len(items))
	workers := max(1, runtime.GOMAXPROCS(0)-1)
	per := (len(items) + workers - 1) / workers
	var wg sync.WaitGroup
	for lo := 0; lo < len(items); lo += per {
		part := out[lo:min(lo+per, len(items))]
		wg.Go(func() {
			for j := range part {
				part[j] = predecodeOne(itemBytes(items[lo+j]))
			}
		})
	}
	wg.Wait()
	return out
}

func predecodeOne(data []byte) (p predecoded) {
	p.data = data
	defer func() {
		if recover() != nil {
			p = predecoded{data: data, redo: true}
		}
	}()
	if p.expo = checkExponents(data); p.expo != nil {
		return p
	}
	_, ser := codec()
	p.obj, p.gvk, p.err = ser.Decode(data, nil, nil)
	return p
}
