"""The few libbpf calls that register a BPF struct_ops congestion control, through ctypes
on the system's libbpf (1.1 or later; Debian's `libbpf1`). Each call's failure becomes a
`LibbpfError` naming the call and the kernel's errno.

Why ctypes and not a C loader: the runner loads controls in-process (no extra binary to
build or find), and the parameter names and ranges come straight from
contracts/contract.json, the list the schema and the QUIC agent also read."""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
from functools import cache

# include/uapi/linux/bpf.h of kernels ≥ 6.4 (Debian 12's headers predate both).
BPF_STRUCT_OPS_ATTACH = 44  # enum bpf_attach_type: BPF_STRUCT_OPS
BPF_F_LINK = 1 << 13  # map flag: a struct_ops map registered through a link


class LibbpfError(RuntimeError):
    def __init__(self, call: str, err: int, detail: str = ""):
        self.errno = err
        name = errno.errorcode.get(err, str(err))
        super().__init__(f"{call} failed: {name} ({os.strerror(err)}){': ' + detail if detail else ''}")


@cache
def lib() -> ctypes.CDLL:
    """libbpf.so.1, with the signatures used here; LibbpfError if it is not installed."""
    path = ctypes.util.find_library("bpf") or "libbpf.so.1"
    try:
        so = ctypes.CDLL(path, use_errno=True)
    except OSError as e:
        raise LibbpfError("loading libbpf", errno.ENOENT, f"{e} (apt-get install libbpf1)") from None
    p, c_int, c_size = ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t
    sigs = {
        "bpf_object__open_mem": (p, [p, c_size, p]),
        "bpf_object__next_map": (p, [p, p]),
        "bpf_object__load": (c_int, [p]),
        "bpf_object__close": (None, [p]),
        "bpf_map__name": (ctypes.c_char_p, [p]),
        "bpf_map__fd": (c_int, [p]),
        "bpf_map__set_initial_value": (c_int, [p, p, c_size]),
        "bpf_map__set_map_flags": (c_int, [p, ctypes.c_uint32]),
        "bpf_map__map_flags": (ctypes.c_uint32, [p]),
        "bpf_map__attach_struct_ops": (p, [p]),
        "bpf_link__disconnect": (None, [p]),
        "bpf_link__destroy": (c_int, [p]),
        "bpf_link_create": (c_int, [c_int, c_int, c_int, p]),
        "bpf_obj_pin": (c_int, [c_int, ctypes.c_char_p]),
        "bpf_obj_get": (c_int, [ctypes.c_char_p]),
    }
    for name, (res, args) in sigs.items():
        fn = getattr(so, name)
        fn.restype, fn.argtypes = res, args
    return so


def _fail(call: str, ret: int | None = None, detail: str = "") -> LibbpfError:
    """libbpf ≥ 1.0 returns -errno and sets errno; NULL-returning calls set errno only."""
    err = -ret if ret is not None and ret < 0 else ctypes.get_errno()
    return LibbpfError(call, err or errno.EINVAL, detail)


class StructOpsObject:
    """An opened BPF object file (from memory) holding one struct_ops map. Use as a
    context manager: the object is closed on exit (a registered control lives on in its
    pinned link)."""

    def __init__(self, image: bytes, what: str):
        self._lib = lib()
        self._image = ctypes.create_string_buffer(image, len(image))  # libbpf may keep pointers into it
        self.what = what
        ctypes.set_errno(0)
        self._obj = self._lib.bpf_object__open_mem(self._image, len(image), None)
        if not self._obj:
            raise _fail("bpf_object__open_mem", detail=what)

    def __enter__(self) -> StructOpsObject:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        if self._obj:
            self._lib.bpf_object__close(self._obj)
            self._obj = None

    def maps(self) -> dict[str, int]:
        """Map name → libbpf's map pointer."""
        out: dict[str, int] = {}
        m = self._lib.bpf_object__next_map(self._obj, None)
        while m:
            out[self._lib.bpf_map__name(m).decode()] = m
            m = self._lib.bpf_object__next_map(self._obj, m)
        return out

    def set_initial_value(self, map_name: str, data: bytes) -> None:
        buf = ctypes.create_string_buffer(data, len(data))
        ret = self._lib.bpf_map__set_initial_value(self.maps()[map_name], buf, len(data))
        if ret != 0:
            raise _fail("bpf_map__set_initial_value", ret, f"{self.what}: {map_name} ({len(data)} bytes)")

    def prepare_for_link(self, map_name: str) -> None:
        """Marks the struct_ops map as registered through a link (libbpf 1.1 does not do
        it for `SEC(".struct_ops")`): updating the map then only readies it."""
        m = self.maps()[map_name]
        ret = self._lib.bpf_map__set_map_flags(m, self._lib.bpf_map__map_flags(m) | BPF_F_LINK)
        if ret != 0:
            raise _fail("bpf_map__set_map_flags", ret, self.what)

    def load(self) -> None:
        ret = self._lib.bpf_object__load(self._obj)
        if ret != 0:
            raise _fail("bpf_object__load", ret, f"{self.what} (the verifier's log: run with LIBBPF_LOG_LEVEL=debug)")

    def register_pinned(self, map_name: str, pin_path: str) -> None:
        """Fills the struct_ops map, creates its link (which registers the control with
        the kernel) and pins the link at `pin_path`; on any failure nothing stays
        registered."""
        m = self.maps()[map_name]
        ctypes.set_errno(0)
        ready = self._lib.bpf_map__attach_struct_ops(m)
        if not ready:
            raise _fail("bpf_map__attach_struct_ops", detail=self.what)
        # The map is only readied (BPF_F_LINK); libbpf's own link would try to delete
        # the element on destroy, which a link-registered map refuses: drop it quietly.
        self._lib.bpf_link__disconnect(ready)
        self._lib.bpf_link__destroy(ready)
        link_fd = self._lib.bpf_link_create(self._lib.bpf_map__fd(m), 0, BPF_STRUCT_OPS_ATTACH, None)
        if link_fd < 0:
            raise _fail("bpf_link_create", link_fd, self.what)
        try:
            ret = self._lib.bpf_obj_pin(link_fd, pin_path.encode())
            if ret != 0:
                raise _fail("bpf_obj_pin", ret, pin_path)
        finally:
            # Without a pin this was the last reference: closing it unregisters.
            os.close(link_fd)


def pinned_exists(path: str) -> bool:
    """Whether `path` holds a pinned BPF object we can open."""
    fd = lib().bpf_obj_get(path.encode())
    if fd < 0:
        return False
    os.close(fd)
    return True
