// dl_open, for the cgo preambles that open a library at run time
// (libturbojpeg, libdeflate, cuFFT): #cgo CFLAGS: -I${SRCDIR}/<path to here>.
#include <dlfcn.h>
#include <stdio.h>

// dl_open opens soname and looks up the n functions names into fns. It
// returns the library's handle, or NULL with dlerror's message in msg
// (and the library closed again) when either fails.
static void *dl_open(const char *soname, const char *const *names, void **fns, int n, char *msg, size_t msglen) {
	void *h = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
	if (h == NULL) {
		snprintf(msg, msglen, "%s", dlerror());
		return NULL;
	}
	for (int i = 0; i < n; i++) {
		fns[i] = dlsym(h, names[i]);
		if (fns[i] == NULL) {
			snprintf(msg, msglen, "%s", dlerror()); // before dlclose frees it
			dlclose(h);
			return NULL;
		}
	}
	return h;
}
