"""A fleet's archives and outputs at URLs (docs/fleet.md, "Archives in object stores"): s3://, gs://,
file://, memory:// or anything else fsspec knows, through fsspec (imported on first use: `pip install
pt2onnx[fleet]`). Credentials and endpoints come from fsspec's and the stores' SDKs' own configuration
(AWS_* variables, FSSPEC_S3_* variables, fsspec's and the SDKs' config files): pt2onnx adds none.

A prefix is searched as a directory is, with the same relative names, so shards partition it alike.
An archive is streamed to a local file by the task that converts it, once; a model is written
locally and uploaded whole: a single PUT on an object store, which makes the object appear complete
or not at all, a temporary name and a rename elsewhere, so the final name never holds part of one."""
import datetime
import os
import posixpath
import shutil
import uuid

# Stores whose single PUT (or multipart upload) makes an object appear whole or not at all.
ATOMIC_PUT = frozenset({"s3", "s3a", "gs", "gcs", "az", "abfs", "abfss", "adl", "oci", "oss"})
LOCAL = frozenset({"file", "local"})
# Keys of an fsspec info() that hold a modification time, as the implementations name it.
TIME_KEYS = ("mtime", "LastModified", "last_modified", "updated", "modified", "created")


def is_url(text):
    """Whether `text` is a URL (the CLI's test too: a model path containing "://" is a fleet)."""
    return isinstance(text, str) and "://" in text


def _fsspec(url):
    try:
        import fsspec
    except ImportError:
        raise ValueError(f"'{url}' is a URL: archives and outputs at URLs need fsspec, which is not installed: "
                         f"pip install pt2onnx[fleet]") from None
    return fsspec


def filesystem(url):
    """(fsspec filesystem, its path) for `url`; ValueError for a protocol nothing here implements."""
    fsspec = _fsspec(url)
    try:
        return fsspec.core.url_to_fs(url)
    except ImportError as e:  # fsspec knows the protocol but its package is missing ("Install s3fs ...")
        raise ValueError(f"'{url}': {e} (pip install pt2onnx[fleet] brings fsspec and s3fs; other stores need "
                         f"their fsspec package, e.g. gcsfs for gs://)") from None
    except ValueError as e:  # "Protocol not known: ..."
        raise ValueError(f"'{url}': {e}") from None


def _protocols(fs):
    return {fs.protocol} if isinstance(fs.protocol, str) else set(fs.protocol)


def expand(given, suffixes):
    """[(archive URL, name relative to `given`, its info)] for a URL: a prefix searched as a directory
    (the archives under it), a glob, or one archive."""
    fs, root = filesystem(given)
    fs.invalidate_cache()  # a long-lived process (convert_many in a service) sees the store as it is now
    try:
        if fs.isdir(root):
            base = root.rstrip("/")
            return [(fs.unstrip_protocol(p), p[len(base):].lstrip("/"), info)
                    for p, info in sorted(fs.find(root, detail=True).items())
                    if p.endswith(suffixes) and info.get("type", "file") == "file"]
        if any(c in root for c in "*?["):
            matches = sorted(fs.glob(root, detail=True).items())
            found = [(fs.unstrip_protocol(p), posixpath.basename(p), info) for p, info in matches
                     if info.get("type", "file") == "file"]
            if found:
                return found
        elif fs.isfile(root):
            return [(fs.unstrip_protocol(root), posixpath.basename(root.rstrip("/")), fs.info(root))]
    except ValueError:
        raise
    except Exception as e:  # noqa: BLE001 - the store's own errors (no such bucket, no credentials, ...)
        raise ValueError(f"cannot list '{given}': {type(e).__name__}: {e}") from e
    raise ValueError(f"'{given}' is neither an archive, a directory nor a glob that matches files")


def _timestamp(value):
    if isinstance(value, datetime.datetime):
        return (value if value.tzinfo else value.replace(tzinfo=datetime.timezone.utc)).timestamp()
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return _timestamp(datetime.datetime.fromisoformat(value))
        except ValueError:
            return None
    return None


def modified(location, info=None):
    """The modification time (seconds since the epoch) of a file at a URL or a local path, from `info`
    (its listing's) when that has one; None when its filesystem gives none; FileNotFoundError when it
    does not exist."""
    if not is_url(location):
        return os.path.getmtime(location)
    for key in TIME_KEYS:
        if info and (found := _timestamp(info.get(key))) is not None:
            return found
    fs, path = filesystem(location)
    try:
        return _timestamp(fs.modified(path))
    except (NotImplementedError, AttributeError, KeyError):
        return None


def output_newer(out, archive, archive_info=None):
    """Whether `out` exists and is at least as new as `archive`. Without times (a filesystem that gives
    none) an existing output is taken as up to date: the record's digest of the archive's name, size
    (and ETag) and arguments decides."""
    if is_url(out):
        fs, path = filesystem(out)
        try:
            info = fs.info(path)
        except FileNotFoundError:
            return False
        if info.get("type", "file") != "file":
            return False
        out_time = modified(out, info)
    elif os.path.isfile(out):
        out_time = os.path.getmtime(out)
    else:
        return False
    archive_time = modified(archive, archive_info)
    return out_time is None or archive_time is None or out_time >= archive_time


def identity(url, info=None):
    """What the record's digest keeps of an archive at a URL besides its name: its size, and its ETag
    when the store gives one (a new upload of other bytes changes it)."""
    if info is None:
        fs, path = filesystem(url)
        info = fs.info(path)
    etag = info.get("ETag") or info.get("etag") or info.get("md5Hash")
    return [info.get("size")] + ([str(etag)] if etag else [])


def read_bytes(url):
    fs, path = filesystem(url)
    return fs.cat_file(path)


def read_text_if_exists(url):
    """The text of the file at `url`, None when there is none."""
    try:
        return read_bytes(url).decode()
    except FileNotFoundError:
        return None


def list_names(url):
    """The names of the files directly in the directory (or prefix) `url`; none when it does not exist."""
    fs, path = filesystem(url)
    fs.invalidate_cache(path)
    try:
        return [posixpath.basename(p.rstrip("/")) for p in fs.ls(path, detail=False)]
    except FileNotFoundError:
        return []


def makedirs(url):
    """The directory `url`; nothing on an object store, which has none (and a bucket is never created)."""
    fs, path = filesystem(url)
    if not _protocols(fs) & ATOMIC_PUT:
        fs.makedirs(path, exist_ok=True)


def download(url, local_path):
    """Streams the file at `url` to `local_path` (in chunks: an archive is never held in memory)."""
    fs, path = filesystem(url)
    os.makedirs(os.path.dirname(local_path), exist_ok=True)
    fs.get_file(path, local_path)


def put_atomic(local_path, url):
    """Uploads the local file to `url` so that a reader sees the old file or the whole new one, never
    part of it (an upload that fails leaves nothing new at `url`)."""
    fs, dest = filesystem(url)
    protocols = _protocols(fs)
    if protocols & ATOMIC_PUT:
        fs.put_file(local_path, dest)
        return
    temporary = f"{dest}.tmp-{uuid.uuid4().hex[:12]}"
    try:
        if protocols & LOCAL:  # a rename within one directory is atomic
            os.makedirs(os.path.dirname(dest) or ".", exist_ok=True)
            shutil.copyfile(local_path, temporary)
            os.replace(temporary, dest)
        else:  # a filesystem whose writes show as they go (memory://, sftp://, ...): written aside, then moved
            fs.put_file(local_path, temporary)
            fs.mv(temporary, dest)
    except BaseException:
        try:
            if protocols & LOCAL:
                os.remove(temporary)
            else:
                fs.rm(temporary)
        except (OSError, NotImplementedError):
            pass  # never written, or already moved
        raise


def upload_model(local_model, url):
    """Uploads a model the convert wrote into a directory of its own, with its external-data files
    (MODEL.onnx.data) first: the model never names a file that is not there yet."""
    folder = os.path.dirname(local_model)
    for root, _, files in os.walk(folder):
        for name in sorted(files):
            side = os.path.join(root, name)
            if side != local_model:
                put_atomic(side, posixpath.join(posixpath.dirname(url), os.path.relpath(side, folder)))
    put_atomic(local_model, url)


def write_bytes(url, data, scratch_dir):
    """`data` to `url` through a local file and put_atomic."""
    local = os.path.join(scratch_dir, uuid.uuid4().hex)
    with open(local, "wb") as f:
        f.write(data)
    try:
        put_atomic(local, url)
    finally:
        os.remove(local)
