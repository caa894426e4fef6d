"""`aqueduct cert`: write a development CA and a loopback server certificate to a directory.

`aqueduct cert --client NAME` instead signs a client certificate (NAME.pem, NAME.key) with the dev CA
already in the directory, for servers started with `aqueduct serve --client-ca DIR/ca.pem` (mutual TLS).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..quic.certs import DEV_NAMES, fingerprint, make_client_cert, make_dev_certs

OUTPUT_FILES = ("ca.pem", "ca.key", "cert.pem", "key.pem")


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add the `cert` subcommand."""
    p = sub.add_parser("cert", help="create a dev CA and server certificate (ca.pem, ca.key, cert.pem, key.pem)")
    p.add_argument("--dir", default="certs", help="output directory (default: ./certs)")
    p.add_argument("--name", action="append", dest="names",
                   help=f"server name (repeatable; default: {', '.join(DEV_NAMES)})")
    p.add_argument("--days", type=int, default=365, help="validity in days (default: 365)")
    p.add_argument("--force", action="store_true", help="replace certificate and key files that already exist")
    p.add_argument("--client", metavar="NAME",
                   help="issue a client certificate NAME.pem / NAME.key from the dev CA in --dir (mutual TLS)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Generate the files and print where they are; existing files are kept unless `--force`."""
    if args.client is not None:
        return _client(args)
    existing = [name for name in OUTPUT_FILES if (Path(args.dir) / name).exists()]
    if existing and not args.force:
        print(f"aqueduct cert: {', '.join(existing)} already in {args.dir}; pass --force to replace them",
              file=sys.stderr)
        return 2
    paths = make_dev_certs(args.dir, tuple(args.names) if args.names else DEV_NAMES, args.days)
    print(f"CA certificate:     {paths.ca}")
    print(f"server certificate: {paths.cert}")
    print(f"server key:         {paths.key}")
    print(f"server fingerprint: sha256:{fingerprint(paths.cert.read_bytes())}")
    return 0


def _client(args: argparse.Namespace) -> int:
    out = Path(args.dir)
    missing = [name for name in ("ca.pem", "ca.key") if not (out / name).exists()]
    if missing:
        print(f"aqueduct cert: no dev CA in {args.dir} ({', '.join(missing)} missing); run `aqueduct cert` first",
              file=sys.stderr)
        return 2
    if (out / f"{args.client}.pem").exists() and not args.force:
        print(f"aqueduct cert: {args.client}.pem already in {args.dir}; pass --force to replace it", file=sys.stderr)
        return 2
    cert, key = make_client_cert(out, args.client, args.days)
    print(f"client certificate: {cert}")
    print(f"client key:         {key}")
    print(f"client fingerprint: sha256:{fingerprint(cert.read_bytes())}")
    return 0
