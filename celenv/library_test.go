package celenv

import (
	"errors"
	"testing"
)

var errorsIs = errors.Is

func TestQuantityLibrary(t *testing.T) {
	m := `device.capacity["gpu.nvidia.com"].memory`
	runExprCases(t, []exprCase{
		{"compareTo orders quantities across suffixes", m + `.compareTo(quantity("81920Mi")) == 0`, true, nil},
		{"isGreaterThan is strict", m + `.isGreaterThan(quantity("80Gi"))`, false, nil},
		{"isLessThan compares decimal and binary suffixes", m + `.isLessThan(quantity("100G"))`, true, nil},
		{"equality of equal quantities", m + ` == quantity("80Gi")`, true, nil},
		{"equality against a sum is no overload, as in Kubernetes", m + ` == ` + m + `.add(0)`, false, ErrRuntime},
		{"a sum on the left may be compared", m + `.add(0) == ` + m, true, nil},
		{"add quantity", `quantity("1Gi").add(quantity("1Gi")).compareTo(quantity("2Gi")) == 0`, true, nil},
		{"add int", `quantity("1k").add(24).asInteger() == 1024`, true, nil},
		{"sub quantity", `quantity("2").sub(quantity("500m")).compareTo(quantity("1.5")) == 0`, true, nil},
		{"sub int", `quantity("2").sub(3).asInteger() == -1`, true, nil},
		{"asInteger of an integer", `quantity("1Mi").asInteger() == 1048576`, true, nil},
		{"asInteger of a fraction fails", `quantity("1.5").asInteger() == 1`, false, ErrRuntime},
		{"isInteger of a fraction", `quantity("1.5").isInteger()`, false, nil},
		{"asApproximateFloat", `quantity("1500m").asApproximateFloat() == 1.5`, true, nil},
		{"sign of a negative quantity", `sign(quantity("-3")) == -1`, true, nil},
		{"sign of zero", `sign(quantity("0")) == 0`, true, nil},
		{"isQuantity accepts suffixes", `isQuantity("10Gi")`, true, nil},
		{"isQuantity rejects spaces", `isQuantity("10 Gi")`, false, nil},
		{"quantity of a bad string fails at runtime", `sign(quantity("ten")) == 1`, false, ErrRuntime},
		{"fractional capacity", `device.capacity["dra.example.com"].bandwidth.isInteger()`, false, nil},
	})
}

func TestSemverLibrary(t *testing.T) {
	cc := `device.attributes["gpu.nvidia.com"].cudaComputeCapability`
	runExprCases(t, []exprCase{
		{"version attribute compares with semver", cc + `.compareTo(semver("9.0.0")) >= 0`, true, nil},
		{"isGreaterThan is strict", cc + `.isGreaterThan(semver("9.0.0"))`, false, nil},
		{"isLessThan", cc + `.isLessThan(semver("10.0.0"))`, true, nil},
		{"equality", cc + ` == semver("9.0.0")`, true, nil},
		{"major minor patch", `semver("1.2.3").major() == 1 && semver("1.2.3").minor() == 2 && semver("1.2.3").patch() == 3`, true, nil},
		{"pre-release sorts first", `semver("1.0.0-rc.1").isLessThan(semver("1.0.0"))`, true, nil},
		{"numeric not lexical order", `semver("1.10.0").isGreaterThan(semver("1.9.0"))`, true, nil},
		{"build metadata is ignored by equality", `semver("1.0.0+a") == semver("1.0.0")`, true, nil},
		{"strict parse rejects a v prefix", `semver("v1.0.0").major() == 1`, false, ErrRuntime},
		{"normalize drops the v prefix", `semver("v1.0.0", true) == semver("1.0.0")`, true, nil},
		{"normalize fills missing parts", `semver("2", true) == semver("2.0.0")`, true, nil},
		{"normalize strips leading zeros", `semver("01.002.3", true) == semver("1.2.3")`, true, nil},
		{"normalize keeps pre-release", `semver("1.2.3-01a", true).patch() == 3`, true, nil},
		{"normalize refuses metadata on a short version", `semver("1.2-rc", true).major() == 1`, false, ErrRuntime},
		{"isSemver strict", `isSemver("1.2")`, false, nil},
		{"isSemver normalized", `isSemver("1.2", true)`, true, nil},
		{"isSemver with normalize false", `isSemver("v1.2.3", false)`, false, nil},
		{"comparing a version with a string is a runtime error", cc + ` == "9.0.0"`, false, ErrRuntime},
	})
}

func TestListsLibrary(t *testing.T) {
	x := `device.attributes["dra.example.com"]`
	runExprCases(t, []exprCase{
		{"isSorted true", `[1, 2, 2, 3].isSorted()`, true, nil},
		{"isSorted false", `["b", "a"].isSorted()`, false, nil},
		{"sum of ints", `[1, 2, 3].sum() == 6`, true, nil},
		{"sum of an empty list is zero", `dyn([]).sum() == 0`, true, nil},
		{"sum of doubles", `[0.5, 0.25].sum() == 0.75`, true, nil},
		{"sum of durations", `[duration("1m"), duration("30s")].sum() == duration("90s")`, true, nil},
		{"min", `[3, 1, 2].min() == 1`, true, nil},
		{"max", `["a", "c", "b"].max() == "c"`, true, nil},
		{"min of an empty list fails", `[1].slice(0, 0).min() == 0`, false, ErrRuntime},
		{"indexOf", `[1, 2, 1].indexOf(1) == 0`, true, nil},
		{"lastIndexOf", `[1, 2, 1].lastIndexOf(1) == 2`, true, nil},
		{"indexOf missing", `[1].indexOf(5) == -1`, true, nil},
		{"includes on a list", `[1, 2].includes(2)`, true, nil},
		{"includes on a scalar attribute", `device.attributes["gpu.nvidia.com"].architecture.includes("Hopper")`, true, nil},
		{"includes on a list attribute", x + `.zones.includes("b")`, true, nil},
		{"list attribute sum", x + `.ids.sum() == 11`, true, nil},
		{"list attribute of versions", x + `.version.exists(v, v.major() == 2)`, true, nil},
		{"list attribute of bools", x + `.flags.all(f, f)`, true, nil},
		{"in on a list attribute", `7 in ` + x + `.ids`, true, nil},
	})
}

func TestRegexLibrary(t *testing.T) {
	runExprCases(t, []exprCase{
		{"find constant pattern", `"gpu-123".find("[0-9]+") == "123"`, true, nil},
		{"find no match", `"gpu".find("[0-9]+") == ""`, true, nil},
		{"find dynamic pattern", `"gpu-123".find(device.driver.substring(0, 0) + "[0-9]") == "1"`, true, nil},
		{"find bad dynamic pattern fails", `"x".find(device.driver.substring(0, 0) + "(") == ""`, false, ErrRuntime},
		{"find bad constant pattern is rejected", `"x".find("(") == ""`, false, ErrCompile},
		{"findAll", `"a1b2c3".findAll("[0-9]") == ["1", "2", "3"]`, true, nil},
		{"findAll with limit", `"a1b2c3".findAll("[0-9]", 2) == ["1", "2"]`, true, nil},
		{"matches", `device.driver.matches("^gpu\\.")`, true, nil},
	})
}

func TestExtensions(t *testing.T) {
	g := `device.attributes["gpu.nvidia.com"]`
	runExprCases(t, []exprCase{
		{"strings: split and join", `device.driver.split(".").join("/") == "gpu/nvidia/com"`, true, nil},
		{"strings: lowerAscii", `"GPU".lowerAscii() == "gpu"`, true, nil},
		{"strings: format", `"%s-%d".format(["a", 1]) == "a-1"`, true, nil},
		{"sets: contains", `sets.contains([1, 2, 3], [3, 1])`, true, nil},
		{"sets: intersects", `sets.intersects(device.attributes["dra.example.com"].zones, ["b", "z"])`, true, nil},
		{"bindings", `cel.bind(gpu, ` + g + `, gpu.index == 3 && gpu.architecture == "Hopper")`, true, nil},
		{"two-variable comprehension", g + `.exists(k, v, k == "index" && v == 3)`, true, nil},
		{"transformList", `[1, 2].transformList(i, v, v * 10) == [10, 20]`, true, nil},
		{"lists: sort and distinct", `[3, 1, 3].distinct().sort() == [1, 3]`, true, nil},
		{"lists: range", `lists.range(3).size() == 3`, true, nil},
		{"optional chaining on a missing attribute", g + `.?nosuch.orValue(7) == 7`, true, nil},
		{"optional chaining on a present attribute", g + `.?index.orValue(0) == 3`, true, nil},
		{"cross-type numeric comparison", g + `.index < 3.5 && ` + g + `.index > 2u`, true, nil},
		{"heterogeneous list literal is rejected", `[1, "a"].size() == 2`, false, ErrCompile},
		{"bad duration literal is rejected", `duration("1x") > duration("1s")`, false, ErrCompile},
	})
}
