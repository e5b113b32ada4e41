package pods

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	schedulingapi "k8s.io/api/scheduling/v1beta1"

	"github.com/dralloc/dralloc/allocator"
)

// gangSearch is the state of one SearchGroupPlacement call.
//
// The search tries the pods in order, each on the nodes in order and then left out (when minCount
// allows), and returns the first assignment, in that lexicographic order, where every node's share of
// the claims can be allocated. Three cuts keep that answer and skip most of the rest:
//
//   - Pods of one kind (shape: the same claims from the same templates or of the same spec, the same
//     predicate verdicts on every node, the same extended resources) are interchangeable when no claim
//     still to allocate is shared between pods of the group (a shared one is allocated with the first pod
//     that comes to it): a node's state then depends only on which pods are on it, not on their order. The first feasible assignment has the pods of a kind on non-decreasing nodes
//     (left out counting as last), since swapping two of them gives another feasible, smaller one; so a
//     pod is only tried on nodes from the node of the previous pod of its kind on.
//   - Nodes of one class (the allocator's NodeClasses for every claim the group may allocate, the same
//     predicate verdicts for every pod, the same usability of the group's allocated claims and the same
//     extended-resource needs) are interchangeable while no pod of the group is on them: swapping two of
//     them in the first feasible assignment gives another feasible one, smaller unless the pod went to the
//     first empty node of its class. So a pod tries only the first empty node of each class.
//   - Counting: a node holds at most cap(kind, class) pods of one kind (tried, alone on an empty node of
//     the class), so a domain whose nodes hold fewer than minCount pods, summed over kinds, has no
//     placement and is not searched. This decides a gang of n pods over fewer than n places in a few
//     tries, where the search would try every injective assignment.
type gangSearch struct {
	c        *Cluster
	ctx      context.Context
	group    *schedulingapi.PodGroup
	minCount int
	budget   *Budget
	limit    int
	prune    bool

	reqs     []*request
	extNames []string
	own      [][]string // per pod: the claims only it uses, put back before its node is allocated again

	// Per pod and node of the snapshot: whether the predicates let the pod on the node.
	allowed [][]bool
	// shape is per pod its kind; kinds lists the pods of each kind, in order.
	shape []int
	kinds [][]int
	// prev is per pod the previous pod of its kind when pods of a kind are interchangeable, else -1.
	prev []int
	// class is per node of the snapshot its class (nodes interchangeable while empty).
	class []int
	caps  map[[2]int]*holding // per kind and class

	// The domain being searched.
	nodes      []*v1.Node
	index      []int         // per node: its index in the snapshot's nodes
	assign     []int         // per pod: index into nodes, or -1
	on         []int         // per node: the pods of pods[:i] assigned to it
	nodeClaims []*nodeClaims // per placed pod: what was allocated for it (the extended-resource claim)
}

// holding is what is known of how many pods of one kind a node of one class holds.
type holding struct {
	fits  int  // this many fit
	exact bool // and one more does not
}

// try counts one try against the budget, or says why there is none left.
func (s *gangSearch) try() error {
	if err := s.ctx.Err(); err != nil {
		return context.Cause(s.ctx)
	}
	if s.budget.Used >= s.limit {
		return fmt.Errorf("PodGroup %s/%s: %w after %d tries", s.group.Namespace, s.group.Name, allocator.ErrSearchBudget, s.budget.Used)
	}
	s.budget.Used++
	return nil
}

// prepare computes, once for all domains, the predicate verdicts, the claims each pod owns, the pods'
// kinds and the nodes' classes.
func (s *gangSearch) prepare(base *allocator.Snapshot, nodes []*v1.Node) error {
	users := map[string]int{} // claim name → pods of the group that use it
	for _, r := range s.reqs {
		seen := map[string]bool{}
		for _, pc := range r.claims {
			if !seen[pc.Claim.Name] {
				seen[pc.Claim.Name] = true
				users[pc.Claim.Name]++
			}
		}
	}
	s.own = make([][]string, len(s.reqs))
	s.allowed = make([][]bool, len(s.reqs))
	sharedPending := false
	for p, r := range s.reqs {
		owner := ownerOf{apiVersion: "v1", kind: "Pod", name: r.pod.Name, uid: uidOf(r.pod)}
		for _, pc := range r.claims {
			private := pc.PodGroup == nil && (owner.owns(pc.Claim) || users[pc.Claim.Name] == 1)
			if private && !slices.Contains(s.own[p], pc.Claim.Name) {
				s.own[p] = append(s.own[p], pc.Claim.Name)
			}
			if !private && pc.Claim.Status.Allocation == nil {
				sharedPending = true
			}
		}
		if s.extNames[p] != "" {
			s.own[p] = append(s.own[p], s.extNames[p])
		}
		s.allowed[p] = make([]bool, len(nodes))
		for n, node := range nodes {
			s.allowed[p][n] = s.c.predicates(r, node) == ""
		}
	}

	// Kinds of pods: the same key, the same kind.
	s.shape = make([]int, len(s.reqs))
	s.prev = make([]int, len(s.reqs))
	s.kinds = nil
	kindOf := map[string]int{}
	for p := range s.reqs {
		key := fmt.Sprint(p) // without pruning every pod is a kind of its own
		if s.prune {
			var err error
			if key, err = s.podKey(p); err != nil {
				return err
			}
		}
		k, ok := kindOf[key]
		if !ok {
			k = len(s.kinds)
			kindOf[key] = k
			s.kinds = append(s.kinds, nil)
		}
		s.shape[p] = k
		s.prev[p] = -1
		// With a claim shared between pods still to allocate, the state of a node depends on the order
		// in which the pods came to it (the claim is allocated with the first): pods are not
		// interchangeable then.
		if s.prune && !sharedPending && len(s.kinds[k]) > 0 {
			s.prev[p] = s.kinds[k][len(s.kinds[k])-1]
		}
		s.kinds[k] = append(s.kinds[k], p)
	}
	s.caps = map[[2]int]*holding{}
	return s.classify(base, nodes)
}

// podKey is what makes two pods interchangeable: the same predicate verdicts, the same claims (a claim
// of its own by its spec, a shared one by its name) and the same extended resources.
func (s *gangSearch) podKey(p int) (string, error) {
	r := s.reqs[p]
	var b strings.Builder
	for _, ok := range s.allowed[p] {
		if ok {
			b.WriteByte('1')
		} else {
			b.WriteByte('0')
		}
	}
	type claimKey struct {
		Entry string
		First int // the first entry naming the same claim: two entries may share one
		Group bool
		Name  string                         `json:",omitempty"` // a shared or allocated claim
		Spec  *resourceapi.ResourceClaimSpec `json:",omitempty"` // a claim of its own to allocate
	}
	type containerKey struct {
		Requests v1.ResourceList
		Sidecar  bool
	}
	var key struct {
		Claims     []claimKey
		Extended   map[v1.ResourceName]int64
		Containers []containerKey
		Requests   map[v1.ResourceName]int64 // what NodeResourcesFit counts of the pod on a node
		Ports      []string                  // and NodePorts
	}
	key.Requests = r.demand.requests
	for _, hp := range r.demand.ports {
		key.Ports = append(key.Ports, fmt.Sprint(hp))
	}
	for _, pc := range r.claims {
		first := slices.IndexFunc(r.claims, func(o PodClaim) bool { return o.Claim.Name == pc.Claim.Name })
		ck := claimKey{Entry: pc.Name, First: first, Group: pc.PodGroup != nil, Name: pc.Claim.Name}
		if slices.Contains(s.own[p], pc.Claim.Name) && pc.Claim.Status.Allocation == nil && len(pc.Claim.Status.ReservedFor) == 0 {
			ck.Name, ck.Spec = "", &pc.Claim.Spec
		}
		key.Claims = append(key.Claims, ck)
	}
	if r.ext != nil {
		// The extended-resource claim is built from the containers' requests.
		key.Extended = r.ext.requests
		for _, c := range append(slices.Clone(r.pod.Spec.InitContainers), r.pod.Spec.Containers...) {
			key.Containers = append(key.Containers, containerKey{Requests: c.Resources.Requests, Sidecar: c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways})
		}
	}
	js, err := json.Marshal(key)
	if err != nil {
		return "", fmt.Errorf("%s: %w", podName(r.pod), err)
	}
	b.Write(js)
	return b.String(), nil
}

// classify sorts the nodes into classes of nodes that the group's pods cannot tell apart.
func (s *gangSearch) classify(base *allocator.Snapshot, nodes []*v1.Node) error {
	s.class = make([]int, len(nodes))
	if !s.prune {
		for n := range nodes {
			s.class[n] = n
		}
		return nil
	}
	// Every claim the group may allocate, and for the extended resources one claim per need a node
	// gives them; the allocated claims' usability per node.
	var claims []*resourceapi.ResourceClaim
	var allocated []*resourceapi.ResourceClaim
	seen := map[string]bool{}
	for _, r := range s.reqs {
		for _, pc := range r.claims {
			if seen[pc.Claim.Name] {
				continue
			}
			seen[pc.Claim.Name] = true
			cur, ok := base.Claim(pc.Claim.Namespace, pc.Claim.Name)
			if !ok {
				cur = pc.Claim
			}
			if cur.Status.Allocation != nil {
				allocated = append(allocated, cur)
			} else {
				claims = append(claims, cur)
			}
		}
	}
	keys := make([]strings.Builder, len(nodes))
	for p, r := range s.reqs {
		if r.ext == nil {
			continue
		}
		needs := map[string]bool{}
		for n, node := range nodes {
			need, err := r.ext.forNode(node)
			fp := fmt.Sprint(need, err != nil) // fmt prints maps sorted by key
			fmt.Fprintf(&keys[n], "ext%d:%s;", p, fp)
			if err == nil && need != nil && !needs[fp] {
				needs[fp] = true
				probe, _ := s.c.extendedClaim(r.pod, r.ext, need, fmt.Sprintf("gang-probe-%d-%d", p, len(needs)))
				claims = append(claims, probe)
			}
		}
	}
	classes, err := base.NodeClasses(s.ctx, claims)
	if err != nil {
		return err
	}
	ids, err := classes.AppendClasses(nil, nodes)
	if err != nil {
		return err
	}
	classOf := map[string]int{}
	for n, node := range nodes {
		b := &keys[n]
		fmt.Fprintf(b, "class:%d;fit:%s;", ids[n], s.c.fitKey(node))
		for p := range s.reqs {
			if s.allowed[p][n] {
				b.WriteByte('1')
			} else {
				b.WriteByte('0')
			}
		}
		b.WriteByte(';')
		for _, cl := range allocated {
			usable, err := usableOn(cl, node)
			fmt.Fprint(b, usable, err != nil, ",")
		}
		k, ok := classOf[b.String()]
		if !ok {
			k = len(classOf)
			classOf[b.String()] = k
		}
		s.class[n] = k
	}
	return nil
}

// setDomain makes the domain's nodes the ones searched.
func (s *gangSearch) setDomain(d domain) {
	s.nodes, s.index = d.nodes, d.index
	s.assign = make([]int, len(s.reqs))
	for p := range s.assign {
		s.assign[p] = -1
	}
	s.on = make([]int, len(s.nodes))
	s.nodeClaims = make([]*nodeClaims, len(s.reqs))
}

// enoughRoom reports whether the domain's nodes may hold minCount pods: for each kind, at most as many
// pods as it has, and at most what every node holds of it alone. Nodes are asked one class at a time,
// the largest classes first, and each only as far as the kind's pods still need room.
func (s *gangSearch) enoughRoom(base *allocator.Snapshot) (bool, error) {
	type group struct{ first, count int } // a class in the domain: its first node, its number of nodes
	var groups []group
	at := map[int]int{}
	for n, g := range s.index {
		k := s.class[g]
		if i, ok := at[k]; ok {
			groups[i].count++
			continue
		}
		at[k] = len(groups)
		groups = append(groups, group{first: n, count: 1})
	}
	slices.SortStableFunc(groups, func(x, y group) int { return y.count - x.count })
	total := 0
	for kind, members := range s.kinds {
		room := 0
		for _, g := range groups {
			if room >= len(members) {
				break
			}
			want := (len(members) - room + g.count - 1) / g.count
			holds, err := s.holds(base, kind, g.first, want)
			if err != nil {
				return false, err
			}
			room += holds * g.count
		}
		total += min(room, len(members))
	}
	return total >= s.minCount, nil
}

// holds returns how many pods of a kind node n holds alone, counting to want at most.
func (s *gangSearch) holds(base *allocator.Snapshot, kind, n, want int) (int, error) {
	members := s.kinds[kind]
	want = min(want, len(members))
	key := [2]int{kind, s.class[s.index[n]]}
	c := s.caps[key]
	if c == nil {
		c = &holding{}
		s.caps[key] = c
		if !s.allowed[members[0]][s.index[n]] {
			c.exact = true
		}
	}
	for !c.exact && c.fits < want {
		if err := s.try(); err != nil {
			return 0, err
		}
		k := c.fits + 1
		for _, p := range members[:k] {
			s.assign[p] = n
		}
		f := base.Fork()
		ok, err := s.joint(f, n, members[k-1])
		f.Discard()
		for _, p := range members[:k] {
			s.assign[p] = -1
		}
		switch {
		case err != nil && s.ctx.Err() != nil:
			return 0, context.Cause(s.ctx)
		case err != nil:
			// The allocator gave up on k pods at once, or met an error the search may never meet (it
			// may never put k pods there): no bound from this class.
			c.fits = len(members)
		case ok:
			c.fits = k
		default:
			c.exact = true
		}
	}
	return min(c.fits, want), nil
}

// full reports that node n holds as many pods of pod i's kind as a node of its class can (counted by
// enoughRoom), so that pod i need not be tried there.
func (s *gangSearch) full(i, n int) bool {
	if !s.prune || s.on[n] == 0 {
		return false
	}
	c := s.caps[[2]int{s.shape[i], s.class[s.index[n]]}]
	if c == nil || !c.exact {
		return false
	}
	there := 0
	for _, p := range s.kinds[s.shape[i]] {
		if p < i && s.assign[p] == n {
			there++
		}
	}
	return there >= c.fits
}

// search places pods[i:] on top of f (which holds the placements of pods[:i]) and returns the final
// fork, or nil when no placement gives minCount pods a node.
func (s *gangSearch) search(i int, f *allocator.Snapshot, placed int) (*allocator.Snapshot, error) {
	if i == len(s.reqs) {
		if placed >= s.minCount {
			return f, nil
		}
		return nil, nil
	}
	start := 0
	if prev := s.prev[i]; prev >= 0 {
		start = s.assign[prev]
	}
	if start >= 0 {
		// Classes with an empty node already met: the first of them stands for the others.
		var met map[int]bool
		if s.prune {
			met = map[int]bool{}
		}
		for n := range s.nodes {
			g := s.index[n]
			if met != nil && s.on[n] == 0 {
				if met[s.class[g]] {
					continue
				}
				met[s.class[g]] = true
			}
			if n < start || !s.allowed[i][g] || s.full(i, n) {
				continue
			}
			if err := s.try(); err != nil {
				return nil, err
			}
			next := f.Fork()
			s.assign[i] = n
			s.on[n]++
			ok, err := s.joint(next, n, i)
			if err == nil && ok {
				var final *allocator.Snapshot
				final, err = s.search(i+1, next, placed+1)
				if err == nil && final == nil {
					ok = false
				} else {
					if final != next {
						next.Discard()
					}
					s.on[n]--
					return final, err
				}
			}
			s.on[n]--
			s.assign[i] = -1
			next.Discard()
			if err != nil {
				return nil, err
			}
		}
	}
	// Leave pod i out when the rest can still reach minCount.
	s.assign[i] = -1
	if placed+len(s.reqs)-i-1 >= s.minCount {
		return s.search(i+1, f, placed)
	}
	return nil, nil
}

// joint allocates on node n, in f, the claims of every pod of pods[:last+1] assigned to n, together:
// first the claims those pods own (generated from templates, used by no other pod of the group, and
// extended-resource claims) go back to what they were before the search, then everything they still
// need is allocated in one call, and every claim is reserved for its consumer.
func (s *gangSearch) joint(f *allocator.Snapshot, n, last int) (bool, error) {
	node := s.nodes[n]
	var on []int
	for p := 0; p <= last; p++ {
		if s.assign[p] == n {
			on = append(on, p)
		}
	}
	for _, p := range on {
		if err := s.reset(f, p); err != nil {
			return false, err
		}
	}
	if len(on) > 1 {
		// NodePorts and NodeResourcesFit for the group's pods on the node together (each alone passed
		// the predicates): they must fit next to each other, as when the scheduler binds them one by one.
		together := make([]*request, len(on))
		for k, p := range on {
			together[k] = s.reqs[p]
		}
		if s.c.fitFilters(together, node) != "" {
			return false, nil
		}
	}
	var toAlloc []*resourceapi.ResourceClaim
	seen := map[string]bool{}
	extOf := make([]*nodeClaims, len(on))
	for k, p := range on {
		r := s.reqs[p]
		for _, pc := range r.claims {
			cur, ok := f.Claim(pc.Claim.Namespace, pc.Claim.Name)
			if !ok {
				cur = pc.Claim
			}
			if cur.Status.Allocation != nil {
				usable, err := usableOn(cur, node)
				if err != nil {
					return false, err
				}
				if !usable {
					return false, nil
				}
				continue
			}
			if !seen[cur.Name] {
				seen[cur.Name] = true
				toAlloc = append(toAlloc, cur)
			}
		}
		nc := &nodeClaims{}
		if r.ext != nil {
			need, err := r.ext.forNode(node)
			if err != nil {
				return false, nil
			}
			if need != nil {
				nc.ext, nc.mappings = s.c.extendedClaim(r.pod, r.ext, need, s.extNames[p])
				toAlloc = append(toAlloc, nc.ext)
			}
		}
		extOf[k] = nc
	}
	if len(toAlloc) > 0 {
		results, err := f.Allocate(s.ctx, node, toAlloc)
		if errors.Is(err, allocator.ErrUnsatisfiable) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		for k, claim := range toAlloc {
			out := claim.DeepCopy()
			out.Status.Allocation = &results[k]
			if err := f.AddOrUpdateClaim(out); err != nil {
				return false, err
			}
		}
	}
	for k, p := range on {
		r := s.reqs[p]
		s.nodeClaims[p] = extOf[k]
		names := make([]*resourceapi.ResourceClaim, 0, len(r.claims)+1)
		cons := make([]resourceapi.ResourceClaimConsumerReference, 0, len(r.claims)+1)
		for _, pc := range r.claims {
			names = append(names, pc.Claim)
			cons = append(cons, consumer(r.pod, pc.PodGroup))
		}
		if extOf[k].ext != nil {
			names = append(names, extOf[k].ext)
			cons = append(cons, consumer(r.pod, nil))
		}
		for j, cl := range names {
			cur, ok := f.Claim(cl.Namespace, cl.Name)
			if !ok {
				return false, fmt.Errorf("ResourceClaim %s/%s: %w", cl.Namespace, cl.Name, ErrClaimNotFound)
			}
			if reservedFor(cur, cons[j]) && slices.Contains(cur.Finalizers, resourceapi.Finalizer) {
				continue
			}
			if !reservedFor(cur, cons[j]) && len(cur.Status.ReservedFor) >= resourceapi.ResourceClaimReservedForMaxSize {
				return false, nil
			}
			out := cur.DeepCopy()
			reserve(out, cons[j])
			if err := f.AddOrUpdateClaim(out); err != nil {
				return false, err
			}
		}
	}
	return true, nil
}

// reset puts the claims pod p owns back as they were before the search: generated ones are removed,
// others restored from the Cluster's snapshot.
func (s *gangSearch) reset(f *allocator.Snapshot, p int) error {
	ns := s.reqs[p].pod.Namespace
	for _, name := range s.own[p] {
		if orig, ok := s.c.snap.Claim(ns, name); ok {
			if err := f.AddOrUpdateClaim(orig); err != nil {
				return err
			}
		} else if _, ok := f.Claim(ns, name); ok {
			if err := f.DeleteClaim(ns, name); err != nil {
				return err
			}
		}
	}
	return nil
}
