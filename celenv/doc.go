// Package celenv is the CEL environment of Kubernetes Dynamic Resource
// Allocation (resource.k8s.io/v1, Kubernetes 1.37): the one device selectors
// of DeviceClasses and ResourceClaims, DeviceTaintRules and derived
// attributes are written in.
//
// An expression Kubernetes accepts compiles here and gives the same result
// on the same device; one Kubernetes rejects is rejected here. The work is
// split the way cel-go splits it, so that the expensive part is paid once:
//
//   - Env (NewEnv) declares the variable "device" and the libraries:
//     Kubernetes' quantity, semver, lists, regex, URL, IP, CIDR and format
//     functions, and the cel-go extensions Kubernetes enables (strings, sets,
//     lists, bindings, two-variable comprehensions, optional types). It
//     prices every call as Kubernetes does (cost limit, worst-case estimate)
//     and caches compiled expressions in a bounded cache whose lookups take
//     no lock.
//   - Selector (Env.Compile) and Derived (Env.CompileDerived) are compiled
//     expressions, with their worst-case cost estimate.
//   - Device (NewDevice) is a device converted once into what CEL reads:
//     versions parsed, quantities copied, maps built.
//   - Selector.Matches and Derived.Evaluate decide, many times, cheaply:
//     typically without allocating.
//
// Evaluation is bounded. The runtime cost limit is Kubernetes' (1,000,000
// by default, Options.CostLimit) with Kubernetes' prices, raised where they
// do not bound the work: calls dispatched at run time on dyn operands,
// list concatenation, and format, replace and join, which refuse a result
// whose size alone would exceed the limit before building it (bounds.go).
// So an expression cannot build values beyond about ten characters or one
// list element per unit of the limit. Loops check the context every 100
// iterations, as in Kubernetes. Quantities beyond 10^±1000 are refused by
// every quantity function: Kubernetes takes minutes on them.
//
// Lint explains an expression against a set of devices: names no device
// publishes, type mismatches, and the outcome per device. Selector.Reads
// says which attributes and capacities an expression can read, when it
// reads them by constant names: devices that agree on those get the same
// verdict, which lets a caller evaluate once per kind of device.
//
// Errors: compile errors are *CompileError (errors.Is ErrCompile, with the
// position); evaluation errors are *EvalError wrapping ErrCostLimit or
// ErrRuntime (refined by ErrMissingAttribute for lookups of names a device
// does not publish, and wrapping the context's cause when the context
// ended), naming the expression and the device.
//
// Kubernetes' authorizer libraries are not part of the environment: they
// only act on variables the DRA environment does not declare.
//
// celenv is a leaf package: it imports cel-go, blang/semver, k8s.io/api and
// k8s.io/apimachinery, and of this module only allocator/gates (the feature
// gates, a package that imports nothing).
package celenv
