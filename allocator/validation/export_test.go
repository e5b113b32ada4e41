package validation

import resourceapi "k8s.io/api/resource/v1"

// DeviceOK exposes deviceOK to the external tests.
func DeviceOK(d *resourceapi.Device) bool { return deviceOK(d, &checked{}) }
