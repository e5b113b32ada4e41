package verify

import (
	"fmt"

	resourceapi "k8s.io/api/resource/v1"
)

type matchKey struct {
	claim   int
	request string
	device  DeviceID
}

type matchResult struct {
	ok     bool
	err    error
	rule   Rule
	reason string
}

// selectable evaluates the class selectors, then the request selectors, on the device, as the Kubernetes
// allocator does (the first selector that is false decides). A compile or runtime error is returned; upstream
// treats it as a fatal error of the allocation attempt.
func (cc *claimCheck) selectable(req *request, d *device) (bool, error) {
	key := matchKey{cc.index, req.name, d.id}
	if m, ok := cc.matches[key]; ok {
		return m.ok, m.err
	}
	m := cc.evaluate(req, d)
	cc.matches[key] = m
	return m.ok, m.err
}

func (cc *claimCheck) evaluate(req *request, d *device) matchResult {
	class := cc.classes[req.class]
	if class == nil {
		return matchResult{rule: RuleClass, reason: fmt.Sprintf("device class %q not found", req.class)}
	}
	if ok, i, err := cc.allMatch(class.Spec.Selectors, d); err != nil {
		return matchResult{err: fmt.Errorf("class %s: selector #%d on device %s: %w", class.Name, i, d.id, err)}
	} else if !ok {
		return matchResult{rule: RuleClass, reason: fmt.Sprintf("selector #%d of class %s is false: %s", i, class.Name, class.Spec.Selectors[i].CEL.Expression)}
	}
	if ok, i, err := cc.allMatch(req.selectors, d); err != nil {
		return matchResult{err: fmt.Errorf("claim %s: selector #%d on device %s: %w", cc.name, i, d.id, err)}
	} else if !ok {
		return matchResult{rule: RuleSelector, reason: fmt.Sprintf("selector #%d of the request is false: %s", i, req.selectors[i].CEL.Expression)}
	}
	return matchResult{ok: true}
}

func (cc *claimCheck) allMatch(selectors []resourceapi.DeviceSelector, d *device) (bool, int, error) {
	for i, s := range selectors {
		if s.CEL == nil {
			return false, i, fmt.Errorf("CEL expression empty (unsupported selector type?)")
		}
		sel, err := cc.env.Compile(s.CEL.Expression)
		if err != nil {
			return false, i, err
		}
		ok, err := sel.Matches(cc.ctx, d.celView())
		if err != nil {
			return false, i, err
		}
		if !ok {
			return false, i, nil
		}
	}
	return true, 0, nil
}
