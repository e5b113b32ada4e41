package celenv

import "testing"

func TestNetLibraries(t *testing.T) {
	runExprCases(t, []exprCase{
		{"ip family 4", `ip("10.0.0.1").family() == 4`, true, nil},
		{"ip family 6", `ip("2001:db8::1").family() == 6`, true, nil},
		{"ip loopback", `ip("127.0.0.1").isLoopback()`, true, nil},
		{"ip unspecified", `ip("::").isUnspecified()`, true, nil},
		{"ip global unicast", `ip("8.8.8.8").isGlobalUnicast()`, true, nil},
		{"ip link-local unicast", `ip("169.254.0.1").isLinkLocalUnicast()`, true, nil},
		{"ip link-local multicast", `ip("224.0.0.1").isLinkLocalMulticast()`, true, nil},
		{"ip with zone is rejected", `ip("fe80::1%eth0").family() == 6`, false, ErrRuntime},
		{"IPv4-mapped IPv6 is rejected", `isIP("::ffff:1.2.3.4")`, false, nil},
		{"isCanonical", `ip.isCanonical("2001:db8::1") && !ip.isCanonical("2001:DB8::1")`, true, nil},
		{"ip to string", `string(ip("10.0.0.1")) == "10.0.0.1"`, true, nil},
		{"cidr contains ip", `cidr("10.0.0.0/8").containsIP("10.2.3.4")`, true, nil},
		{"cidr does not contain ip", `cidr("10.0.0.0/8").containsIP(ip("11.0.0.1"))`, false, nil},
		{"cidr contains cidr", `cidr("10.0.0.0/8").containsCIDR("10.1.0.0/16")`, true, nil},
		{"a wider cidr is not contained", `cidr("10.0.0.0/16").containsCIDR(cidr("10.0.0.0/8"))`, false, nil},
		{"masked", `cidr("10.1.2.3/8").masked() == cidr("10.0.0.0/8")`, true, nil},
		{"ip of cidr", `cidr("10.1.2.3/8").ip() == ip("10.1.2.3")`, true, nil},
		{"prefixLength", `cidr("10.0.0.0/8").prefixLength() == 8`, true, nil},
		{"isCIDR", `isCIDR("10.0.0.0/8") && !isCIDR("10.0.0.1")`, true, nil},
		{"bad cidr fails", `cidr("10.0.0.0/33").prefixLength() == 33`, false, ErrRuntime},
		{"url parts", `url("https://example.com:8080/a?x=1").getHostname() == "example.com" && url("https://example.com:8080/a").getPort() == "8080"`, true, nil},
		{"url query", `url("https://e.com/?x=1&x=2").getQuery()["x"] == ["1", "2"]`, true, nil},
		{"url scheme and path", `url("https://e.com/a%20b").getScheme() == "https" && url("https://e.com/a%20b").getEscapedPath() == "/a%20b"`, true, nil},
		{"isURL needs an absolute URL or path", `isURL("https://e.com") && isURL("/p") && !isURL("e.com")`, true, nil},
		{"bad url fails", `url("e.com").getHost() == ""`, false, ErrRuntime},
	})
}

func TestFormatLibrary(t *testing.T) {
	runExprCases(t, []exprCase{
		{"valid label", `!format.dns1123Label().validate("my-gpu").hasValue()`, true, nil},
		{"invalid label lists problems", `format.dns1123Label().validate("My_GPU").value().size() > 0`, true, nil},
		{"named format", `format.named("dns1123Subdomain").value().validate(device.driver) == optional.none()`, true, nil},
		{"unknown named format", `format.named("nosuch").hasValue()`, false, nil},
		{"qualified name", `!format.qualifiedName().validate("example.com/x").hasValue()`, true, nil},
		{"label value", `format.labelValue().validate("a b").hasValue()`, true, nil},
		{"uuid", `!format.uuid().validate("4d1e7f7a-1b2c-4d5e-8f90-123456789abc").hasValue()`, true, nil},
		{"byte", `!format.byte().validate("aGVsbG8=").hasValue() && format.byte().validate("a").hasValue()`, true, nil},
		{"date", `!format.date().validate("2024-02-29").hasValue() && format.date().validate("2023-02-29").hasValue()`, true, nil},
		{"datetime", `!format.datetime().validate("2024-01-01T10:00:00Z").hasValue() && format.datetime().validate("2024-01-01T25:00:00Z").hasValue()`, true, nil},
		{"uri", `!format.uri().validate("https://x").hasValue()`, true, nil},
		{"prefix formats allow a trailing dash", `!format.dns1123LabelPrefix().validate("gpu-").hasValue() && format.dns1123Label().validate("gpu-").hasValue()`, true, nil},
		{"dns1035 label", `format.dns1035Label().validate("1abc").hasValue() && !format.dns1035LabelPrefix().validate("a-").hasValue()`, true, nil},
		{"formats compare by name", `format.dns1123Label() == format.named("dns1123Label").value()`, true, nil},
	})
}
