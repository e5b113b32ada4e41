package allocator

import (
	"errors"
	"fmt"
	"math"
	"sync"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/dralloc/dralloc/allocator/validation"
	"github.com/dralloc/dralloc/celenv"
)

// validate runs the API server's validation of one object (package validation) unless the snapshot trusts
// its objects (Options.TrustAPIServer). An invalid object becomes an *InputError naming the object and the
// first field, with the whole list in InputError.Errors.
func (s *Snapshot) validate(object string, check func(validation.Options) field.ErrorList) error {
	s.ready()
	if s.opts.TrustAPIServer {
		return nil
	}
	env, err := validationEnv(celFeatures(s.f))
	if err != nil {
		return fmt.Errorf("create CEL environment for validation: %w", err)
	}
	errs := check(validation.Options{CEL: env, Capacity: s.capOpts()})
	if len(errs) == 0 {
		return nil
	}
	return invalidObject(object, errs)
}

// invalidObject turns a validation result into an *InputError.
func invalidObject(object string, errs field.ErrorList) error {
	first := errs[0]
	msg := first.ErrorBody()
	if n := len(errs) - 1; n > 0 {
		msg += fmt.Sprintf(" (and %d more)", n)
	}
	return &InputError{Object: object, Field: first.Field, Err: errors.New(msg), Errors: errs}
}

var validationEnvs sync.Map // celenv.Features → *envResult

type envResult struct {
	once sync.Once
	env  *celenv.Env
	err  error
}

// validationEnv is the environment the API server compiles new expressions in, one per set of features,
// shared by all snapshots: building one takes milliseconds, and its compile cache is what makes
// validating the selectors of a class or claim seen before cheap.
func validationEnv(f celenv.Features) (*celenv.Env, error) {
	v, _ := validationEnvs.LoadOrStore(f, &envResult{})
	r := v.(*envResult)
	r.once.Do(func() {
		r.env, r.err = celenv.NewEnv(celenv.Options{NewExpressions: true, Features: &f})
	})
	return r.env, r.err
}

// exactCount reads the count of a request or subrequest with allocationMode ExactCount. The API server
// refuses a count that is not positive; without this check a negative count would allocate nothing and
// report success, also for objects that skipped validation. Counts above the claim limit are refused
// later, with the limit in the message.
func exactCount(count int64) (int, error) {
	switch {
	case count <= 0:
		return 0, fmt.Errorf("must be greater than zero, got %d", count)
	case count > math.MaxInt:
		return 0, fmt.Errorf("exact count %d is too large", count)
	}
	return int(count), nil
}
