package manifest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	resourceapi "k8s.io/api/resource/v1"
	resourcev1alpha3 "k8s.io/api/resource/v1alpha3"
	resourcev1beta1 "k8s.io/api/resource/v1beta1"
	resourcev1beta2 "k8s.io/api/resource/v1beta2"
	schedulingv1alpha3 "k8s.io/api/scheduling/v1alpha3"
	schedulingapi "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	jsonserializer "k8s.io/apimachinery/pkg/runtime/serializer/json"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/dralloc/dralloc/allocator/validation"
)

// Options configure Decode and Load. The zero value reads strictly, applies the API defaults,
// validates every resource.k8s.io object as kube-apiserver does on create and fails on kinds it does
// not read.
type Options struct {
	// NoDefaults turns off the API defaults (see Default) and the admission of pods (see the
	// package doc): objects are returned as written, only converted.
	NoDefaults bool
	// SkipUnknown skips documents of kinds the loader does not read (a Namespace, a ConfigMap, a
	// custom resource) instead of failing; they are listed in Objects.Skipped.
	SkipUnknown bool
	// Namespace is the namespace of namespaced objects that have none, as kubectl takes it from
	// the current context; "default" when empty.
	Namespace string
	// Now is the time defaults take for DeviceTaint.timeAdded; when nil, timeAdded stays unset
	// (see Default).
	Now func() time.Time
	// Suffix gives the random part of the name of a pod with generateName (one a controller
	// creates, or one read without a name): the i-th draw (from 0) for the generateNames that
	// agree in the 58 characters kube-apiserver keeps, in one namespace; see Expand. When nil, a
	// deterministic suffix is derived from those characters and i, which never repeats for fewer
	// than 27⁵ draws. A name that another pod of the input has is drawn again, up to 8 times, as
	// kube-apiserver retries a create with generateName; then it is an error wrapping
	// ErrNameConflict. Names are unique in their namespace across the whole input, except for pods
	// read with their names, which the input may repeat (a later one replaces an earlier one, as
	// kubectl apply would).
	Suffix func(generateName string, i int) string
	// NoValidate turns off the validation of resource.k8s.io objects (package allocator/validation,
	// the same the Snapshot applies) and of the fields of Pods, Nodes and workloads that decide
	// which pods are read (names, replica counts, a StatefulSet's first ordinal), for input known
	// to come from an API server.
	NoValidate bool
	// Validation configures that validation (the CEL environment); the zero value is the default.
	Validation validation.Options
	// Validate, when set, is called with every object after conversion, defaulting and validation
	// (every pod after expansion and admission, once the whole input is read); an error is
	// reported with the object's source, wrapping ErrInvalid.
	Validate func(obj runtime.Object) error
	// TakeSlice, when set, is handed every ResourceSlice as soon as it is read (converted,
	// defaulted, validated, after Validate), in the order of the input, and the slice is not kept
	// in Objects.Slices, which stays empty, nor is its Source: a caller that copies what it needs
	// (an allocator.Snapshot does) lets go of each slice at once, so that the slices of a large
	// dump, most of its memory once decoded, are never all in memory together. The slice is the
	// caller's. A slice read twice (the same name) is handed over twice, as read. An error it
	// returns stops reading; it is reported with the slice's source, wrapping ErrInvalid, as one
	// of Validate is.
	TakeSlice func(slice *resourceapi.ResourceSlice, src Source) error
	// Compact drops from every Pod and Node its managedFields, which no decision reads, and makes the
	// strings that repeat across them (labels, annotations, owners, images, the API server's defaults,
	// condition reasons and messages, node info) share one copy: for callers that decide, and do not
	// write the objects back, so that a large dump holds each such string once.
	Compact bool
	// Stdin is read for the path "-"; os.Stdin when nil.
	Stdin io.Reader
	// MaxPods bounds the pods that the workloads of the input (Deployments, ReplicaSets,
	// StatefulSets, Jobs and DaemonSets, all together) may expand into, so that a manifest asking
	// for a billion replicas, or for a thousand DaemonSets on a thousand Nodes, is an error, not a
	// machine out of memory; DefaultMaxPods when 0. Pods read as they are do not count. Every
	// DaemonSet is checked against every Node, so their pairs are bounded too, at 100 times
	// MaxPods.
	MaxPods int
	// MaxBytes bounds the size of every file and stream read (stdin included), and of every
	// document once its YAML aliases are expanded, so that an endless stream, or a small
	// document whose aliases repeat one large value many times, is an error, not a machine out
	// of memory; DefaultMaxBytes when 0.
	MaxBytes int64
	// MaxObjectBytes bounds one object (a document, or an item of a List) as JSON, as
	// kube-apiserver refuses a request body over 3 MiB (k8s.io/apiserver/pkg/server:
	// MaxRequestBodyBytes), so no object it stores is larger; DefaultMaxObjectBytes when 0. The
	// items of a typed list (a PodList) are bounded only by MaxBytes.
	MaxObjectBytes int64
	// MaxExpandedBytes bounds the size of the pods that the workloads of the input expand into,
	// all together, each pod counted as the size of its workload's pod template in JSON: 100,000
	// pods of a template of 10,000 environment variables would be gigabytes, though neither count
	// nor file is large; DefaultMaxExpandedBytes when 0.
	MaxExpandedBytes int64
}

// DefaultMaxObjectBytes is the size of one object unless Options.MaxObjectBytes says otherwise:
// 3 MiB, kube-apiserver's bound on a request body.
const DefaultMaxObjectBytes = 3 << 20

// DefaultMaxExpandedBytes is the size the pods expanded from workloads may have together unless
// Options.MaxExpandedBytes says otherwise: 1 GiB, the pods of DefaultMaxPods of 10 KiB each.
const DefaultMaxExpandedBytes = 1 << 30

// chargeTemplate counts n pods of workload's template against Options.MaxExpandedBytes.
func (d *decoder) chargeTemplate(workload runtime.Object, n int) error {
	if n <= 0 {
		return nil
	}
	var tmpl *corev1.PodTemplateSpec
	switch w := workload.(type) {
	case *appsv1.Deployment:
		tmpl = &w.Spec.Template
	case *appsv1.ReplicaSet:
		tmpl = &w.Spec.Template
	case *appsv1.StatefulSet:
		tmpl = &w.Spec.Template
	case *appsv1.DaemonSet:
		tmpl = &w.Spec.Template
	case *batchv1.Job:
		tmpl = &w.Spec.Template
	default:
		return nil
	}
	data, err := json.Marshal(tmpl)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrDecode, err)
	}
	size := int64(len(data))
	left := d.opts.MaxExpandedBytes - d.expandedBytes
	if int64(n) > left/size { // n*size > left, without overflow
		return fmt.Errorf("%w: %d pods of a %d-byte template, with the %d bytes of the pods expanded before more than Options.MaxExpandedBytes (%d)",
			ErrTooLarge, n, size, d.expandedBytes, d.opts.MaxExpandedBytes)
	}
	d.expandedBytes += int64(n) * size
	return nil
}

// DefaultMaxPods is the number of pods the workloads of one input may expand into together unless
// Options.MaxPods says otherwise.
const DefaultMaxPods = 100000

// Decode reads one stream of manifests: YAML documents separated by "---" or JSON objects one
// after the other, each an object or a List of objects. name is the file name errors report.
func Decode(r io.Reader, name string, opts Options) (*Objects, error) {
	d := newDecoder(opts)
	if err := d.stream(r, name); err != nil {
		return nil, err
	}
	if err := d.finish(); err != nil {
		return nil, err
	}
	return d.objs, nil
}

func newDecoder(opts Options) *decoder {
	if opts.Namespace == "" {
		opts.Namespace = corev1.NamespaceDefault
	}
	if opts.MaxPods == 0 {
		opts.MaxPods = DefaultMaxPods
	}
	if opts.MaxBytes == 0 {
		opts.MaxBytes = DefaultMaxBytes
	}
	if opts.MaxObjectBytes == 0 {
		opts.MaxObjectBytes = DefaultMaxObjectBytes
	}
	if opts.MaxExpandedBytes == 0 {
		opts.MaxExpandedBytes = DefaultMaxExpandedBytes
	}
	return &decoder{opts: opts, objs: &Objects{}, namer: newNamer(opts.Suffix)}
}

// stream decodes the documents of one stream into d.objs.
func (d *decoder) stream(r io.Reader, name string) error {
	// As utilyaml.GuessJSONStream guesses, but with a reader that keeps nothing it has handed
	// out: GuessJSONStream's StreamReader keeps every byte of the stream, a copy of the whole
	// input for as long as it is read.
	reader := bufio.NewReaderSize(&bounded{r: r, left: d.opts.MaxBytes}, 4096)
	head, _ := reader.Peek(4096)
	isJSON := bytes.HasPrefix(bytes.TrimLeftFunc(head, unicode.IsSpace), []byte("{"))
	src := Source{File: name}
	if isJSON {
		var in io.Reader = reader
		dec := json.NewDecoder(in)
		for {
			var raw json.RawMessage
			if err := dec.Decode(&raw); err == io.EOF {
				break
			} else if err != nil {
				src.Document++
				return d.readError(src, err)
			}
			if len(raw) > bigDocument {
				// The decoder's buffer has grown to the size of the document and would stay so
				// for the rest of the stream: a new decoder reads what the old one had read ahead.
				in = io.MultiReader(bytes.NewReader(bufferedBytes(dec)), in)
				dec = json.NewDecoder(in)
			}
			src.Document++
			if err := d.document(raw, src); err != nil {
				return err
			}
		}
		return nil
	}
	docs := utilyaml.NewYAMLReader(reader)
	for {
		doc, err := docs.Read()
		if err == io.EOF {
			break
		} else if err != nil {
			return d.readError(Source{File: name, Document: src.Document + 1}, err)
		}
		if !d.wholeLists {
			if handled, err := d.yamlList(doc, Source{File: name, Document: src.Document + 1}); handled {
				if err != nil {
					return err
				}
				src.Document++
				continue
			}
		}
		data, dups, err := yamlToJSON(doc, d.opts.MaxBytes)
		if errors.Is(err, ErrTooLarge) {
			return &Error{Source: Source{File: name, Document: src.Document + 1}, Err: err}
		} else if err != nil {
			return &Error{Source: Source{File: name, Document: src.Document + 1}, Err: fmt.Errorf("%w: %v", ErrDecode, err)}
		}
		if data == nil {
			continue // only comments or whitespace
		}
		src.Document++
		if err := d.document(data, src, dups...); err != nil {
			return err
		}
	}
	return nil
}

// bigDocument is the size of a JSON document past which stream lets go of the decoder that read it.
const bigDocument = 1 << 20

// bufferedBytes copies what dec has read ahead, so that the copy does not keep dec's buffer alive.
func bufferedBytes(dec *json.Decoder) []byte {
	rest, _ := io.ReadAll(dec.Buffered())
	return rest
}

// readError reports an error reading the document at src: the stream is over Options.MaxBytes,
// or it is not YAML or JSON.
func (d *decoder) readError(src Source, err error) error {
	if errors.Is(err, errTooLarge) {
		return &Error{Source: Source{File: src.File}, Err: fmt.Errorf("%w: more than %d bytes (Options.MaxBytes)", ErrTooLarge, d.opts.MaxBytes)}
	}
	return &Error{Source: src, Err: fmt.Errorf("%w: %v", ErrDecode, err)}
}

// yamlToJSON converts a YAML document to JSON, and returns the paths of keys given twice in one
// mapping (the JSON conversion keeps only the last); nil for a document without content. A
// document of more than limit bytes of JSON, its aliases expanded, is an error wrapping
// ErrTooLarge.
func yamlToJSON(doc []byte, limit int64) ([]byte, []string, error) {
	dups, empty, err := duplicateKeys(doc, limit)
	if err != nil || empty {
		return nil, nil, err
	}
	data, err := yaml.YAMLToJSON(doc)
	if err != nil {
		return nil, nil, err
	}
	if int64(len(data)) > limit {
		// The estimate before the conversion was under (escapes), the JSON made is not.
		return nil, nil, tooLargeDocument(limit)
	}
	if bytes.Equal(bytes.TrimSpace(data), []byte("null")) {
		return nil, nil, nil
	}
	return data, dups, nil
}

var (
	schemeOnce    sync.Once
	theScheme     *runtime.Scheme
	theSerializer *jsonserializer.Serializer
)

// scheme returns the scheme of every type the loader reads.
func scheme() *runtime.Scheme {
	s, _ := codec()
	return s
}

// codec returns the scheme of every type the loader reads and a strict JSON serializer over it.
func codec() (*runtime.Scheme, *jsonserializer.Serializer) {
	schemeOnce.Do(func() {
		scheme := runtime.NewScheme()
		for _, add := range []func(*runtime.Scheme) error{
			corev1.AddToScheme, appsv1.AddToScheme, batchv1.AddToScheme, nodev1.AddToScheme,
			resourceapi.AddToScheme, resourcev1beta1.AddToScheme, resourcev1beta2.AddToScheme,
			resourcev1alpha3.AddToScheme, schedulingapi.AddToScheme, schedulingv1alpha3.AddToScheme,
		} {
			if err := add(scheme); err != nil {
				// The k8s.io/api types register without error; this cannot happen.
				panic(err)
			}
		}
		theScheme = scheme
		theSerializer = jsonserializer.NewSerializerWithOptions(jsonserializer.DefaultMetaFactory, scheme, scheme,
			jsonserializer.SerializerOptions{Strict: true})
	})
	return theScheme, theSerializer
}

type decoder struct {
	opts Options
	objs *Objects
	// expanded are the pods expanded from workloads, replicaSetsOf the Deployments whose
	// ReplicaSets were read, and daemonSets the DaemonSets waiting for the Nodes; finish uses
	// them.
	expanded      map[*corev1.Pod]expansion
	replicaSetsOf map[ownerKey]bool
	daemonSets    []pending
	// pods counts the pods expanded, for Options.MaxPods, and expandedBytes their size, for
	// Options.MaxExpandedBytes.
	pods          int
	expandedBytes int64
	// namer draws the names of pods with generateName.
	namer *namer
	// interned is Options.Compact's copy of each string.
	interned interner
	// wholeLists decodes every List as one corev1.List, as before streamList: the tests' reference.
	wholeLists bool
}

// document decodes one JSON document: an object or a List.
func (d *decoder) document(data []byte, src Source, dups ...string) error {
	if err := checkExponents(data); err != nil {
		return &Error{Source: src, Err: fmt.Errorf("%w: %w", ErrDecode, err)}
	}
	if src.Item == 0 && !d.wholeLists && bytes.Contains(data, []byte(`"items"`)) {
		// A List, most likely: its items are decoded one by one (a List in a List, rare and
		// small, is decoded whole, below).
		if handled, err := d.streamList(data, src, dups); handled {
			return err
		}
	}
	_, ser := codec()
	obj, gvk, err := ser.Decode(data, nil, nil)
	return d.decoded(data, obj, gvk, err, src, dups)
}

// decoded is document after the serializer's decode of data: obj, gvk and err are what it returned.
func (d *decoder) decoded(data []byte, obj runtime.Object, gvk *schema.GroupVersionKind, err error, src Source, dups []string) error {
	if list, ok := obj.(*corev1.List); ok && err == nil {
		// The items of a List are decoded one by one, each with the duplicate keys found in it.
		listDups, itemDups := splitItemPaths(dups)
		if err := d.decodeError(obj, gvk, nil, src, listDups); err != nil {
			return err
		}
		for i := range list.Items {
			item := src
			item.Item = i + 1
			if err := d.document(list.Items[i].Raw, item, itemDups[i]...); err != nil {
				return err
			}
		}
		return nil
	}
	if err := d.decodeError(obj, gvk, err, src, dups); err != nil || obj == nil {
		return err
	}
	if meta.IsListType(obj) {
		// A typed list (PodList, ResourceClaimList) as the API returns it; its items carry no
		// apiVersion and kind.
		items, err := meta.ExtractList(obj)
		if err != nil {
			return &Error{Source: src, Object: gvk.Kind, Err: fmt.Errorf("%w: %v", ErrDecode, err)}
		}
		itemKind := gvk.GroupVersion().WithKind(strings.TrimSuffix(gvk.Kind, "List"))
		for i, item := range items {
			isrc := src
			isrc.Item = i + 1
			item.GetObjectKind().SetGroupVersionKind(itemKind)
			if err := d.object(item, isrc); err != nil {
				return err
			}
		}
		return nil
	}
	if size := int64(len(data)); size > d.opts.MaxObjectBytes {
		return &Error{Source: src, Object: objectName(obj, gvk), Err: fmt.Errorf(
			"%w: %d bytes of JSON, more than Options.MaxObjectBytes (%d)", ErrTooLarge, size, d.opts.MaxObjectBytes)}
	}
	return d.object(obj, src)
}

// decodeError turns what the serializer reports into *Error values naming the object and field;
// nil when the document decoded cleanly, or when it is of an unknown kind and SkipUnknown is set
// (then obj is nil).
func (d *decoder) decodeError(obj runtime.Object, gvk *schema.GroupVersionKind, err error, src Source, dups []string) error {
	var errs []error
	object := objectName(obj, gvk)
	for _, path := range dups {
		errs = append(errs, &Error{Source: src, Object: object, Field: path, Err: ErrDuplicateField})
	}
	switch {
	case err == nil:
	case runtime.IsNotRegisteredError(err):
		if d.opts.SkipUnknown {
			d.objs.Skipped = append(d.objs.Skipped, Skipped{Source: src, Kind: gvkString(gvk)})
			return nil
		}
		errs = append(errs, &Error{Source: src, Err: fmt.Errorf("%w %s", ErrUnknownKind, gvkString(gvk))})
	case runtime.IsMissingVersion(err):
		errs = append(errs, &Error{Source: src, Object: object, Field: "apiVersion", Err: fmt.Errorf("%w: required field is missing", ErrDecode)})
	case runtime.IsMissingKind(err):
		errs = append(errs, &Error{Source: src, Object: object, Field: "kind", Err: fmt.Errorf("%w: required field is missing", ErrDecode)})
	case runtime.IsStrictDecodingError(err):
		strict, _ := runtime.AsStrictDecodingError(err)
		for _, e := range strict.Errors() {
			errs = append(errs, strictError(e, src, object))
		}
	default:
		errs = append(errs, &Error{Source: src, Object: object, Err: fmt.Errorf("%w: %v", ErrDecode, err)})
	}
	if obj != nil && meta.IsListType(obj) {
		for _, e := range errs {
			inItem(e.(*Error), obj, gvk)
		}
	}
	return errors.Join(errs...)
}

// splitItemPaths sorts the field paths of a List into those of the List itself and those of each
// item, relative to the item.
func splitItemPaths(paths []string) (list []string, items map[int][]string) {
	items = make(map[int][]string)
	for _, p := range paths {
		if i, rest, ok := itemPath(p); ok {
			items[i] = append(items[i], rest)
		} else {
			list = append(list, p)
		}
	}
	return list, items
}

// itemPath splits "items[3].spec.x" into 3 and "spec.x".
func itemPath(path string) (int, string, bool) {
	rest, ok := strings.CutPrefix(path, "items[")
	if !ok {
		return 0, "", false
	}
	index, rest, ok := strings.Cut(rest, "]")
	if !ok {
		return 0, "", false
	}
	i, err := strconv.Atoi(index)
	if err != nil || i < 0 {
		return 0, "", false
	}
	return i, strings.TrimPrefix(rest, "."), true
}

// inItem moves an error in an item of a typed list (ResourceClaimList) to that item: its source
// names the item and its object is the item's kind and name.
func inItem(e *Error, list runtime.Object, gvk *schema.GroupVersionKind) {
	i, rest, ok := itemPath(e.Field)
	if !ok {
		return
	}
	e.Source.Item = i + 1
	e.Field = rest
	e.Object = ""
	if items, err := meta.ExtractList(list); err == nil && i < len(items) && gvk != nil {
		kind := gvk.GroupVersion().WithKind(strings.TrimSuffix(gvk.Kind, "List"))
		e.Object = objectName(items[i], &kind)
	}
}

func gvkString(gvk *schema.GroupVersionKind) string {
	if gvk == nil {
		return ""
	}
	if gvk.Group == "" {
		return gvk.Version + " " + gvk.Kind
	}
	return gvk.Group + "/" + gvk.Version + " " + gvk.Kind
}

// strictError reads the field path out of the messages of sigs.k8s.io/json's strict decoding
// (`unknown field "spec.x"`, `duplicate field "metadata.name"`).
func strictError(e error, src Source, object string) error {
	msg := e.Error()
	for _, kind := range []struct {
		prefix   string
		sentinel error
	}{{"unknown field ", ErrUnknownField}, {"duplicate field ", ErrDuplicateField}} {
		if rest, ok := strings.CutPrefix(msg, kind.prefix); ok {
			return &Error{Source: src, Object: object, Field: strings.Trim(rest, `"`), Err: kind.sentinel}
		}
	}
	return &Error{Source: src, Object: object, Err: fmt.Errorf("%w: %v", ErrDecode, e)}
}

// objectName is "Kind namespace/name" or "Kind name", as far as the document was decoded.
func objectName(obj runtime.Object, gvk *schema.GroupVersionKind) string {
	kind := ""
	if gvk != nil {
		kind = gvk.Kind
	}
	if obj == nil {
		return kind
	}
	if kind == "" {
		kind = obj.GetObjectKind().GroupVersionKind().Kind
	}
	m, err := meta.Accessor(obj)
	if err != nil || m.GetName() == "" {
		return kind
	}
	if m.GetNamespace() == "" {
		return kind + " " + m.GetName()
	}
	return kind + " " + m.GetNamespace() + "/" + m.GetName()
}

// object converts, defaults, expands and files one decoded object.
func (d *decoder) object(obj runtime.Object, src Source) error {
	gvk := obj.GetObjectKind().GroupVersionKind()
	if !readable(obj) {
		if d.opts.SkipUnknown {
			d.objs.Skipped = append(d.objs.Skipped, Skipped{Source: src, Kind: gvkString(&gvk)})
			return nil
		}
		return &Error{Source: src, Object: objectName(obj, &gvk), Err: fmt.Errorf("%w %s", ErrUnknownKind, gvkString(&gvk))}
	}
	if m, err := meta.Accessor(obj); err == nil && namespaced(obj) && m.GetNamespace() == "" {
		m.SetNamespace(d.opts.Namespace)
	}
	converted, err := Convert(obj)
	if err != nil {
		return &Error{Source: src, Object: objectName(obj, &gvk), Err: err}
	}
	if !d.opts.NoValidate {
		if errs := decisive(converted); len(errs) > 0 {
			return &Error{Source: src, Object: objectName(obj, &gvk), Field: errs[0].Field,
				Err: fmt.Errorf("%w: %w", ErrInvalid, errs.ToAggregate())}
		}
	}
	switch workload := converted.(type) {
	case *appsv1.Deployment, *appsv1.ReplicaSet, *appsv1.StatefulSet, *batchv1.Job:
		n, field := podCount(workload)
		if n > d.opts.MaxPods-d.pods {
			err := fmt.Errorf("%w: %d pods, more than Options.MaxPods (%d)", ErrTooManyPods, n, d.opts.MaxPods)
			if d.pods > 0 {
				err = fmt.Errorf("%w: %d pods, and %d expanded before, more than Options.MaxPods (%d) for the whole input",
					ErrTooManyPods, n, d.pods, d.opts.MaxPods)
			}
			return &Error{Source: src, Object: objectName(obj, &gvk), Field: field, Err: err}
		}
		if err := d.chargeTemplate(workload, n); err != nil {
			return &Error{Source: src, Object: objectName(obj, &gvk), Field: "spec.template", Err: err}
		}
		d.pods += n
		pods, err := expand(workload, d.namer)
		if err != nil {
			return &Error{Source: src, Object: objectName(obj, &gvk), Err: err}
		}
		owner := src
		owner.Owner = objectName(obj, &gvk)
		var e expansion
		if dep, ok := workload.(*appsv1.Deployment); ok {
			e.deployment = ownerKey{"Deployment", dep.Namespace, dep.Name}
		}
		if rs, ok := workload.(*appsv1.ReplicaSet); ok {
			if ref := metav1.GetControllerOf(rs); ref != nil && ref.Kind == "Deployment" {
				d.markReplicaSetOf(ownerKey{"Deployment", rs.Namespace, ref.Name})
			}
		}
		return d.addExpanded(pods, owner, e)
	case *appsv1.DaemonSet:
		// Its pods depend on the Nodes, which may come later in the input.
		d.daemonSets = append(d.daemonSets, pending{workload, src})
		return nil
	}
	// converted is the decoder's own: decoded from the input here, or converted from that.
	_, err = d.add(converted, src, true)
	return err
}

// add defaults obj, validates it and adds it to the objects; it returns what it added. When owned,
// obj shares no memory with anything else and is defaulted in place; otherwise a copy is.
func (d *decoder) add(obj runtime.Object, src Source, owned bool) (runtime.Object, error) {
	if !d.opts.NoDefaults {
		var now time.Time
		if d.opts.Now != nil {
			now = d.opts.Now()
		}
		if owned {
			defaultInPlace(obj, now)
		} else {
			obj = Default(obj, now)
		}
	}
	if !d.opts.NoValidate {
		if errs := validation.Object(obj, d.opts.Validation); len(errs) > 0 {
			return nil, &Error{Source: src, Object: objectName(obj, nil), Field: errs[0].Field,
				Err: fmt.Errorf("%w: %w", ErrInvalid, errs.ToAggregate())}
		}
	}
	// A pod is validated once admitted, when the whole input is read (finish).
	if _, pod := obj.(*corev1.Pod); d.opts.Validate != nil && (!pod || d.opts.NoDefaults) {
		if err := d.opts.Validate(obj); err != nil {
			return nil, &Error{Source: src, Object: objectName(obj, nil), Err: fmt.Errorf("%w: %w", ErrInvalid, err)}
		}
	}
	if s, ok := obj.(*resourceapi.ResourceSlice); ok && d.opts.TakeSlice != nil {
		if err := d.opts.TakeSlice(s, src); err != nil {
			return nil, &Error{Source: src, Object: objectName(obj, nil), Err: fmt.Errorf("%w: %w", ErrInvalid, err)}
		}
		return obj, nil
	}
	// Only an object of the decoder's own is compacted: one shared with the caller is left as it is.
	if d.opts.Compact && (owned || !d.opts.NoDefaults) {
		if d.interned == nil {
			d.interned = interner{}
		}
		switch o := obj.(type) {
		case *corev1.Pod:
			d.interned.pod(o)
		case *corev1.Node:
			d.interned.node(o)
		}
	}
	if !d.objs.add(obj, src) {
		// Not reached: readable admits only kinds that convert or expand to the ones add files.
		gvk := obj.GetObjectKind().GroupVersionKind()
		return nil, &Error{Source: src, Object: objectName(obj, nil), Err: fmt.Errorf("%w %s", ErrUnknownKind, gvkString(&gvk))}
	}
	return obj, nil
}

// readable reports whether obj is of a kind the loader hands out (after conversion and expansion).
func readable(obj runtime.Object) bool {
	switch obj.(type) {
	case *corev1.Pod, *corev1.Node, *corev1.Namespace, *nodev1.RuntimeClass, *corev1.ResourceQuota,
		*resourceapi.ResourceSlice, *resourceapi.DeviceClass, *resourceapi.ResourceClaim,
		*resourceapi.ResourceClaimTemplate, *resourceapi.DeviceTaintRule,
		*resourcev1beta2.ResourceSlice, *resourcev1beta2.DeviceClass, *resourcev1beta2.ResourceClaim,
		*resourcev1beta2.ResourceClaimTemplate, *resourcev1beta2.DeviceTaintRule,
		*resourcev1beta1.ResourceSlice, *resourcev1beta1.DeviceClass, *resourcev1beta1.ResourceClaim,
		*resourcev1beta1.ResourceClaimTemplate, *resourcev1alpha3.DeviceTaintRule,
		*schedulingapi.PodGroup, *schedulingapi.Workload,
		*schedulingv1alpha3.PodGroup, *schedulingv1alpha3.Workload,
		*appsv1.Deployment, *appsv1.ReplicaSet, *appsv1.StatefulSet, *appsv1.DaemonSet, *batchv1.Job:
		return true
	}
	return false
}

// namespaced reports whether obj, a readable object, lives in a namespace.
func namespaced(obj runtime.Object) bool {
	switch obj.(type) {
	case *corev1.Node, *corev1.Namespace, *nodev1.RuntimeClass,
		*resourceapi.ResourceSlice, *resourceapi.DeviceClass, *resourceapi.DeviceTaintRule,
		*resourcev1beta2.ResourceSlice, *resourcev1beta2.DeviceClass, *resourcev1beta2.DeviceTaintRule,
		*resourcev1beta1.ResourceSlice, *resourcev1beta1.DeviceClass, *resourcev1alpha3.DeviceTaintRule:
		return false
	}
	return true
}
