package validation

import (
	"sync"

	"github.com/dralloc/dralloc/capacity"
	"github.com/dralloc/dralloc/celenv"
)

// Options configure validation. The zero value validates as a Kubernetes 1.37 API server with its default
// feature gates.
type Options struct {
	// CEL compiles selector expressions and estimates their cost. It should be an environment for new
	// expressions (celenv.Options{NewExpressions: true}), as the API server uses for objects being created.
	// nil means such an environment with the default features, built once and shared.
	CEL *celenv.Env
	// Capacity selects the request-policy arithmetic (DRAFractionalCapacityRange); the zero value is the
	// Kubernetes 1.37 default.
	Capacity capacity.Options
	// Memo, when set, remembers the capacity and counter maps ResourceSlice found valid, so that a map
	// shared by the devices of many slices is checked once (see Memo). Only for objects nobody modifies.
	Memo *Memo
}

var (
	defaultEnvOnce sync.Once
	defaultEnv     *celenv.Env
	defaultEnvErr  error
)

// env returns the CEL environment to validate with.
func (o Options) env() (*celenv.Env, error) {
	if o.CEL != nil {
		return o.CEL, nil
	}
	defaultEnvOnce.Do(func() {
		defaultEnv, defaultEnvErr = celenv.NewEnv(celenv.Options{NewExpressions: true})
	})
	return defaultEnv, defaultEnvErr
}
