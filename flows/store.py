"""Where a warehouse (or an input) lives: a local folder, a :class:`~pathlib.Path`, or an
object store, a :class:`StoreURL` read and written through fsspec.

A ``StoreURL`` answers the few :class:`~pathlib.Path` questions the warehouse asks (``/``,
``name``, ``parent``, ``exists``, ``is_file``, ``read_bytes``, ``unlink``, ``mkdir``), so
one code path serves both; it has no ``__fspath__``, so no local file call can take it for
a path (``open("s3://b/x")`` would write a folder named ``s3:``). Credentials come from the
store's own environment and configuration files (``AWS_*``, ``AWS_ENDPOINT_URL``, profiles;
``GOOGLE_APPLICATION_CREDENTIALS``; ``AZURE_STORAGE_*``): sysdiff stores none.

Light: read-only commands import it; fsspec is imported only for a URL.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from sysdiff.schemas.errors import InputError

#: URL schemes sysdiff reads and writes (through fsspec), and the package each needs.
SCHEMES = {"s3": "s3fs", "s3a": "s3fs", "gs": "gcsfs", "gcs": "gcsfs", "az": "adlfs",
           "abfs": "adlfs", "abfss": "adlfs"}
_URL = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://(.*)$", re.S)
# "s3:/bucket" or "s3:bucket": a URL with a slash missing, never a folder name to create.
_ALMOST_URL = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]+):")


def is_url(text: str | Path | StoreURL) -> bool:
    """True for ``scheme://...`` (a :class:`StoreURL` included)."""
    return isinstance(text, StoreURL) or (isinstance(text, str) and bool(_URL.match(text)))


def parse_location(text: str | Path, what: str = "warehouse") -> Path | StoreURL:
    """A user's ``--warehouse`` (or an input's location): a plain path, absolute; a
    ``file://`` URL as that path; an object-store URL of a supported scheme as a
    :class:`StoreURL`. Any other URL, or a scheme-like prefix with a slash missing, is an
    InputError (nothing is created)."""
    if isinstance(text, StoreURL):
        return text
    if isinstance(text, Path):
        return text.absolute()
    match = _URL.match(text)
    if match is None:
        almost = _ALMOST_URL.match(text)
        if almost and almost.group(1).lower() in (*SCHEMES, "file", "http", "https"):
            raise InputError(f"the {what} '{text}' looks like a URL with a slash missing; "
                             f"write {almost.group(1)}://BUCKET/PREFIX (or ./{text} for a "
                             "local folder of that name)")
        return Path(text).absolute()
    scheme, rest = match.group(1).lower(), match.group(2)
    if scheme == "file":
        if rest.startswith("localhost/"):
            rest = rest[len("localhost"):]
        if not rest.startswith("/"):
            raise InputError(f"a file:// {what} URL needs an absolute path "
                             f"(file:///path/to/folder), not '{text}'")
        from urllib.parse import unquote

        return Path(unquote(rest))
    if scheme not in SCHEMES:
        raise InputError(f"unsupported {what} URL scheme '{scheme}://' in '{text}'; sysdiff "
                         f"supports a local path, file://, and the object stores "
                         f"{', '.join(s + '://' for s in SCHEMES)}")
    bucket = rest.split("/", 1)[0]
    if not bucket:
        raise InputError(f"the {what} URL '{text}' names no bucket; write "
                         f"{scheme}://BUCKET/PREFIX")
    url = StoreURL(f"{scheme}://{rest.rstrip('/')}")
    url.fs  # noqa: B018 (the package is there, or one line says which to install)
    return url


def location(text: str | Path | StoreURL) -> Path | StoreURL:
    """An internal location string (a job's staging folder, a staged file) back to its
    type; no check (it came from :func:`parse_location`)."""
    if isinstance(text, Path | StoreURL):
        return text
    return StoreURL(text.rstrip("/")) if _URL.match(text) else Path(text)


_FILESYSTEMS: dict[str, Any] = {}


def filesystem(scheme: str) -> Any:
    """The fsspec filesystem of a scheme (one per process; listings never cached, so every
    look sees the store as it is)."""
    fs = _FILESYSTEMS.get(scheme)
    if fs is None:
        try:
            import fsspec

            fs = fsspec.filesystem(scheme, use_listings_cache=False, skip_instance_cache=True)
        except ImportError:
            package = SCHEMES.get(scheme, scheme)
            extra = {"s3fs": "sysdiff[s3]", "adlfs": "sysdiff[azure]",
                     "gcsfs": "sysdiff[gcs]"}.get(package, package)
            raise InputError(f"{scheme}:// needs the package {package}: "
                             f"pip install '{extra}'") from None
        except ValueError as e:  # adlfs: no account and no credentials in the environment
            raise InputError(f"no credentials for the object store {scheme}:// "
                             f"({_first_line(e)}); set {credentials_hint(scheme)}") from None
        _FILESYSTEMS[scheme] = fs
    return fs


# ------------------------------------------------------------- polars' own store client

#: Where polars reads a URL itself (its Rust object-store client, not fsspec), the Azure
#: fields of a connection string as its storage options.
_AZURE_OPTIONS = {"accountname": "account_name", "accountkey": "account_key",
                  "sharedaccesssignature": "sas_token", "blobendpoint": "endpoint"}


def polars_options(source: object) -> dict[str, str] | None:
    """Storage options for polars reading ``source`` (a path, a URL, or a list of them) with
    its own object-store client, where the environment gives the store in a form only
    fsspec reads: an Azure connection string (``AZURE_STORAGE_CONNECTION_STRING``, which
    adlfs takes first; polars reads ``AZURE_STORAGE_ACCOUNT_NAME``/``_KEY`` but not it);
    a Google service account file named by ``GOOGLE_SERVICE_ACCOUNT`` (or ``_PATH``), the
    object-store client's own variables, which polars' Google sign-in (Application Default
    Credentials) would otherwise shadow. None otherwise: polars then reads the environment
    fsspec reads (``AWS_*`` with ``AWS_ENDPOINT_URL`` and profiles,
    ``GOOGLE_APPLICATION_CREDENTIALS``, the Azure account variables)."""
    first = source[0] if isinstance(source, list | tuple) and source else source
    match = _URL.match(str(first))
    scheme = match.group(1).lower() if match else ""
    if scheme in ("gs", "gcs"):
        account = (os.environ.get("GOOGLE_SERVICE_ACCOUNT")
                   or os.environ.get("GOOGLE_SERVICE_ACCOUNT_PATH"))
        return {"service_account": account} if account else None
    text = os.environ.get("AZURE_STORAGE_CONNECTION_STRING")
    if scheme not in ("az", "abfs", "abfss") or not text:
        return None
    fields = dict(part.split("=", 1) for part in text.split(";") if "=" in part)
    fields = {k.strip().lower(): v.strip() for k, v in fields.items()}
    out = {name: fields[k] for k, name in _AZURE_OPTIONS.items() if fields.get(k)}
    if "endpoint" not in out and fields.get("endpointsuffix") and "account_name" in out:
        protocol = fields.get("defaultendpointsprotocol", "https")
        out["endpoint"] = f"{protocol}://{out['account_name']}.blob.{fields['endpointsuffix']}"
    if out.get("endpoint", "").startswith("http://"):
        out["allow_http"] = "true"
    return out


def read_parquet(source: Any, **options: Any) -> Any:
    """``polars.read_parquet`` of a path or URL (:func:`polars_options` for a URL)."""
    import polars as pl

    return pl.read_parquet(source, storage_options=polars_options(source), **options)


def scan_parquet(source: Any, **options: Any) -> Any:
    """``polars.scan_parquet`` of a path or URL (:func:`polars_options` for a URL)."""
    import polars as pl

    return pl.scan_parquet(source, storage_options=polars_options(source), **options)


def read_ipc(source: Any, **options: Any) -> Any:
    """``polars.read_ipc`` of a path or URL (:func:`polars_options` for a URL)."""
    import polars as pl

    return pl.read_ipc(source, storage_options=polars_options(source), **options)


def precondition_failed(error: BaseException) -> bool:
    """The store refused a conditional write (HTTP 412). s3fs says so with FileExistsError
    only when the answer names the condition; SeaweedFS's does not, and reaches here as
    ``OSError(EINVAL)`` caused by the client's 412."""
    seen: BaseException | None = error
    while seen is not None:
        response = getattr(seen, "response", None)
        if isinstance(response, dict) and (
                response.get("Error", {}).get("Code") == "PreconditionFailed"
                or response.get("ResponseMetadata", {}).get("HTTPStatusCode") == 412):
            return True
        text = str(seen).lower().replace("-", "")
        if "precondition" in text or "412" in text:
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def without_paths(text: str) -> str:
    """An error's text without the paths it names (a missing object of a bucket called
    'my-bucket' is not a missing bucket)."""
    return re.sub(r"\S*/\S*", "", text)


def store_error(url: str, error: BaseException) -> InputError | None:
    """The one line a user sees for a store that cannot be used (no such bucket, access
    denied, unreachable endpoint); None for any other error (a missing object is not one)."""
    text, name = _first_line(error), type(error).__name__
    endpoint = os.environ.get("AWS_ENDPOINT_URL")
    where = f" (AWS_ENDPOINT_URL={endpoint})" if endpoint else ""
    if isinstance(error, FileNotFoundError) and "bucket" in without_paths(text).lower():
        bucket = url.split("://", 1)[-1].split("/", 1)[0]
        return InputError(f"no such bucket '{bucket}'; create it first", url)
    hint = credentials_hint(url.split("://", 1)[0].lower())
    if isinstance(error, PermissionError) or "AccessDenied" in text or "Forbidden" in text:
        return InputError(f"the object store refused access ({text}); check the credentials "
                          f"in the environment ({hint})", url)
    if "Connect" in name or "Endpoint" in name or "connect" in text.lower():
        return InputError(f"cannot reach the object store{where}: {text}", url)
    if "NoCredentials" in name or "credentials" in text.lower():
        return InputError(f"no credentials for the object store ({text}); set {hint}", url)
    return None


#: What each store's client reads for its credentials (as its users set them).
CREDENTIALS = {
    "s3": "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE",
    "az": "AZURE_STORAGE_CONNECTION_STRING, or AZURE_STORAGE_ACCOUNT_NAME with "
          "AZURE_STORAGE_ACCOUNT_KEY or AZURE_STORAGE_SAS_TOKEN",
    "gs": "GOOGLE_APPLICATION_CREDENTIALS, or log in with gcloud auth application-default login",
}
_SAME_STORE = {"s3a": "s3", "abfs": "az", "abfss": "az", "gcs": "gs"}


def credentials_hint(scheme: str) -> str:
    return CREDENTIALS.get(_SAME_STORE.get(scheme, scheme), "the store's credentials")


def _first_line(error: BaseException) -> str:
    return str(error).splitlines()[0] if str(error) else type(error).__name__


def _guarded(method: Callable) -> Callable:
    """A :class:`StoreURL` method whose store failures are one-line InputErrors."""

    @functools.wraps(method)
    def call(self: StoreURL, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except InputError:
            raise
        except Exception as e:
            error = store_error(self.url, e)
            if error is None:
                raise
            raise error from None

    return call


@dataclass(frozen=True)
class StoreURL:
    """An object in (or a prefix of) an object store: ``scheme://bucket/key``."""

    url: str

    def __str__(self) -> str:
        return self.url

    def __truediv__(self, rel: str | Path) -> StoreURL:
        rel = str(rel).strip("/")
        return StoreURL(f"{self.url}/{rel}" if rel else self.url)

    @property
    def scheme(self) -> str:
        return self.url.split("://", 1)[0]

    @property
    def key(self) -> str:
        """``bucket/key`` (what fsspec calls the path)."""
        return self.url.split("://", 1)[1]

    @property
    def name(self) -> str:
        return self.key.rsplit("/", 1)[-1]

    @property
    def parent(self) -> StoreURL:
        head = self.key.rsplit("/", 1)[0] if "/" in self.key else self.key
        return StoreURL(f"{self.scheme}://{head}")

    @property
    def fs(self) -> Any:
        return filesystem(self.scheme)

    @_guarded
    def exists(self) -> bool:
        return bool(self.fs.exists(self.key))

    @_guarded
    def is_file(self) -> bool:
        return bool(self.fs.isfile(self.key))

    @_guarded
    def is_dir(self) -> bool:
        return bool(self.fs.isdir(self.key))

    @_guarded
    def size(self) -> int:
        return int(self.fs.size(self.key))

    @_guarded
    def read_bytes(self) -> bytes:
        try:
            return self.fs.cat_file(self.key)
        except FileNotFoundError:
            raise FileNotFoundError(self.url) from None

    @_guarded
    def read_range(self, start: int, end: int) -> bytes:
        """Bytes ``start`` to ``end`` (fewer at the end of the object): one ranged request,
        where a file opened here would read 50 MB ahead."""
        try:
            return self.fs.cat_file(self.key, start=start, end=end)
        except FileNotFoundError:
            raise FileNotFoundError(self.url) from None

    @_guarded
    def write_bytes(self, data: bytes) -> None:
        self.fs.pipe_file(self.key, data)

    @_guarded
    def create(self, data: bytes) -> bool:
        """Write the object only if it does not exist (the store's conditional write:
        ``If-None-Match: *``, a generation precondition); False when it exists."""
        try:
            self.fs.pipe_file(self.key, data, mode="create")
        except FileExistsError:
            return False
        except TypeError:
            raise InputError(f"the object store of {self.url} offers sysdiff no conditional "
                             "write; commits need one (S3, GCS, Azure have it)") from None
        except OSError as e:  # some stores say 'precondition failed' their own way
            if precondition_failed(e):
                return False
            raise
        return True

    @_guarded
    def open(self, mode: str = "rb") -> IO[bytes]:
        return self.fs.open(self.key, mode)

    @_guarded
    def unlink(self, missing_ok: bool = False) -> None:
        try:
            self.fs.rm_file(self.key)
        except FileNotFoundError:
            if not missing_ok:
                raise

    def mkdir(self, parents: bool = False, exist_ok: bool = False) -> None:
        """Nothing to do: an object store has no folders."""

    @_guarded
    def iterdir(self) -> list[StoreURL]:
        try:
            return [StoreURL(f"{self.scheme}://{p.rstrip('/')}")
                    for p in self.fs.ls(self.key, detail=False) if p.rstrip("/") != self.key]
        except FileNotFoundError:
            return []

    @_guarded
    def find(self) -> dict[str, dict]:
        """Every object under this prefix: {relative key: its details (size, ...)}."""
        try:
            found = self.fs.find(self.key, detail=True)
        except FileNotFoundError:
            return {}
        prefix = self.key.rstrip("/") + "/"
        return {k[len(prefix):]: v for k, v in found.items() if k.startswith(prefix)}

    @_guarded
    def copy_to(self, dest: StoreURL) -> None:
        """A copy made by the store (no byte passes through this process)."""
        self.fs.copy(self.key, dest.key)

    @_guarded
    def rename(self, dest: StoreURL) -> None:
        """Copy, then delete (an object store has no rename)."""
        self.fs.mv(self.key, dest.key)


def open_write(path: Path | StoreURL) -> IO[bytes]:
    """A binary file to write (its folder made on a local disk)."""
    if isinstance(path, StoreURL):
        return path.open("wb")
    path.parent.mkdir(parents=True, exist_ok=True)
    return open(path, "wb")  # noqa: SIM115 (the caller closes it)


def open_read(path: str | Path | StoreURL) -> IO[bytes]:
    """A binary file to read."""
    path = location(path) if isinstance(path, str) else path
    if isinstance(path, StoreURL):
        return path.open("rb")
    return open(path, "rb")  # noqa: SIM115 (the caller closes it)


def replace(src: Path | StoreURL, dest: Path | StoreURL) -> None:
    """Move a file (a rename on a local disk; copy and delete on an object store)."""
    if isinstance(src, StoreURL) and isinstance(dest, StoreURL):
        src.rename(dest)
    else:
        import os

        os.replace(src, dest)  # type: ignore[arg-type]


def remote(root: Path | StoreURL) -> bool:
    """True for a warehouse on an object store."""
    return isinstance(root, StoreURL)


#: On an object store, the manifest is a log: each commit creates the next version,
#: ``_log/<version>.json``, with a conditional write (the commit point); the highest is live.
LOG = "_log"
#: The writer's lease and the runs' staging area of a warehouse on an object store.
LEASE = "_lease.json"
STAGING = "_staging"


def log_versions(root: StoreURL) -> list[int]:
    """The manifest versions a warehouse on an object store holds, in order."""
    names = (p.name for p in (root / LOG).iterdir())
    return sorted(int(n[:-5]) for n in names if n.endswith(".json") and n[:-5].isdigit())


def version_name(version: int) -> str:
    return f"{LOG}/{version:012d}.json"
