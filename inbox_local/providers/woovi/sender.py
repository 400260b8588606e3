"""Woovi / OpenPix: deliveries as Woovi signs them, and sample charge notifications (shared/providers/woovi/driver.py
verifies and parses them).

Woovi signs with its private key, which nobody else holds. The local stack's deliveries are signed with
DEV_PRIVATE_KEY below, a development key published in this repository (so anyone can sign with it): its public
half is the `woovi` development secret (dev.py, beside this module), which the local stack stores as the source's
signing secret, and that is the only way a driver trusts it. A deployed stack's signing secret starts as a
generated placeholder and holds a key only if an operator stores one; tests/unit/providers/test_woovi.py and
tests/infra check that nothing deployed carries this key.

`sign(body, secret)`: `secret` is what the source's signing secret holds, i.e. public keys to trust, not a signing
key, so the delivery is signed with the development key; a `secret` that holds a PEM private key signs with that key
instead (`key_pair_secret()`: a fresh pair as one value, its private key followed by its public key, which the driver
trusts when that value is the source's secret: the tests' "another secret").
"""

from __future__ import annotations

import base64
import json
from functools import lru_cache
from typing import Any

from inbox_local.senders._samples import sample_values
from shared.providers.base import WebhookRequest, utc_from_epoch
from shared.providers.woovi.driver import SIGNATURE_HEADER

# RSA-2048, PKCS#8, for the local stack and the tests only (its public key: the woovi development secret;
# SHA-256 of its DER: 563d402aec5eece7c4a13b45149e21422a8605a922049aa274c507bbb881c3c5).
DEV_PRIVATE_KEY = (
    "-----BEGIN PRIVATE KEY-----\n"
    "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQCabXiwsVvstGci\n"
    "WuMPGH2zZhNWhA2oVRQEdOaT1HyxC2ZSUjwjn7X7MTRzRiRCl7uA0u34jYtHD1oG\n"
    "Ztaetd95CnrpyNT9Q1iI8r9hFzsTpa3po3AP4GA2Ekk6KFUNJWqWy9q3bH/BrANI\n"
    "BC70G37L4XEAZWlf01zDCSecdKdCXXpiLppJpseKepumFtI696NJ30WJD7Uhvmnf\n"
    "ICLSWZ5L3n/aVdPnDtniT4d0rU3CWF2AgcxxvaJLtJ2z/QmX8qKG9QDqIBq+R+Uz\n"
    "Hl1j0HtO18jo3705PvYKmCRSqHHNSdWgF3eVPGU5q76FQjZo4HAkKEM6kC2i2Vf8\n"
    "QwqvWq9fAgMBAAECggEAK3VBMKBI2T0PhQiEu3vN7A1+xasV2NhQcMyhEtsKWBx4\n"
    "KBSCXhgU82Kuev4zOBZRKvixBXB30ICOehy4qyNNh1eerWnaHoe0Q53ko6MQ+f93\n"
    "CLf40k73ZGATAW3WOYPdEiC+JT5AWbVZmwuqVwHh1ehUj6L6W4A0q6JI5muhojgR\n"
    "8s+vEQecombSj6RX6hi7/fqxQJaGia86CBMUzETu/Qa6Pmb+B1FH/cPAuVkQS4Wu\n"
    "7R0rauyiRSnnYmKMaz16rYE+vAo5DrYKl8dfVsr+57iRxkg2Y7pN0ondl/Qa+l9+\n"
    "blwsgTUzqnUdy8/vdFMPfcRUw+tL6ruIA/xY9J51GQKBgQDXctYI71Ty89IwoYKZ\n"
    "eEDhp0SpJksF3kg420F3XM0hfSH5w15HRcFf6MMycxwJpDWikwSJQSOSGEOzSF5g\n"
    "LDBUdt05ZOuAxVvXXTG9KiqXT8G7R8RR1xaDksujWOAWWV6QVZW6mpfiAMz0Qd+k\n"
    "MaUj6o+bbqIzhJccVK9ss8aaEwKBgQC3fmeTDNtAyaKPmchuzjnNTIHGd8lf4J8E\n"
    "rSDasKRqA4c/DAaak2djI/wXhwvZxTBld7YG2XyFzNxp05KTE3rSKjCC5AK2lMk5\n"
    "L/DGSJQycI2yejpLY7P3pANNd6DeLHgQejS+jmDDWvM/IAHR07NW/B8flS8Cixcf\n"
    "lLGn0xU/BQKBgHdiF73tuJnDh5YQ+QhHfVRM1pwQLwQ6brSqsfUNRFGpQBlhK628\n"
    "tnGJzhf3dvLUvi+u3ZWctbQvo9wFXt5VvhYfo2g5RtIdCk4lQvl6Ew2zUTuQgfWD\n"
    "hOM1hYenKMzZiq/Z7NTw8vZ10RwMIHugUsy7HgZX4KNBdmZpeqd2WrdnAoGAS+Mb\n"
    "MtW+V60MbhdLrYfcn+tkQJCJ1/0txuFTFR644J9U794pXQRZXcckGxbe79F9knlP\n"
    "7sVDmpJ/FcVKeUk1InYQWhGyjZA7KEuLaHXb1IB4GbgzI7q4U1KhiwhOn5QEk8v2\n"
    "xFhd7G1Q7GpwVjcXlIHw3T71kjez+HumfaHux4ECgYEArkHbXl2xjw1I4kEhUKjU\n"
    "0WQPa6gw0OykGbu3AMKVM4odrP/Yc3mIuSopra2CT0Fir0EDI3Dyu616QEm26jhw\n"
    "9ut25DSScFnE141pN4CnV9V71zowppogUU+6jWtRuZ0tE63E1tqh21MuAGrHngUe\n"
    "bTddOAJJj3yjfwofE09kjD0=\n"
    "-----END PRIVATE KEY-----\n"
)
DEV_KEY_FINGERPRINT = "563d402aec5eece7c4a13b45149e21422a8605a922049aa274c507bbb881c3c5"
_PRIVATE_PEM_MARK = "-----BEGIN PRIVATE KEY-----"
_PRIVATE_PEM_END = "-----END PRIVATE KEY-----"


@lru_cache(maxsize=4)
def _private_key(pem: str) -> Any:
    from cryptography.hazmat.primitives.serialization import load_pem_private_key  # noqa: PLC0415 - lazy

    return load_pem_private_key(pem.encode("ascii"), password=None)


def compute_signature(body: bytes, private_key_pem: str = DEV_PRIVATE_KEY) -> str:
    """What Woovi puts in `x-webhook-signature`: base64 of the RSA PKCS#1 v1.5 / SHA-256 signature of the body."""
    from cryptography.hazmat.primitives import hashes  # noqa: PLC0415
    from cryptography.hazmat.primitives.asymmetric import padding  # noqa: PLC0415

    signature = _private_key(private_key_pem).sign(body, padding.PKCS1v15(), hashes.SHA256())
    return base64.b64encode(signature).decode("ascii")


def iso_ms(epoch: int) -> str:
    """Woovi's timestamps: UTC with milliseconds and `Z` ("2025-09-24T15:08:13.578Z")."""
    return utc_from_epoch(epoch).isoformat(timespec="milliseconds").replace("+00:00", "Z")


# canonical status -> (event, charge status)
_SAMPLES: dict[str, tuple[str, str]] = {
    "pending": ("OPENPIX:CHARGE_CREATED", "ACTIVE"),
    "paid": ("OPENPIX:CHARGE_COMPLETED", "COMPLETED"),
    "failed": ("OPENPIX:CHARGE_EXPIRED", "EXPIRED"),
}
SAMPLE_STATUSES: tuple[str, ...] = tuple(_SAMPLES)


def key_pair_secret(bits: int = 2048) -> str:
    """A fresh RSA key pair as one value: the private key's PEM (what `sign` signs with) and the public key's PEM
    (what the driver trusts when the value is a source's secret)."""
    from cryptography.hazmat.primitives import serialization  # noqa: PLC0415 - lazy
    from cryptography.hazmat.primitives.asymmetric import rsa  # noqa: PLC0415

    key = rsa.generate_private_key(public_exponent=65537, key_size=bits)
    private = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode("ascii")
    public = (
        key.public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        .decode("ascii")
    )
    return private + public


def _signing_key(secret: str) -> str:
    start = secret.find(_PRIVATE_PEM_MARK)
    if start < 0:
        return DEV_PRIVATE_KEY
    end = secret.find(_PRIVATE_PEM_END, start)
    return secret[start : end + len(_PRIVATE_PEM_END)] + "\n" if end > 0 else DEV_PRIVATE_KEY


class WooviSender:
    sample_statuses: tuple[str, ...] = SAMPLE_STATUSES

    def sign(self, body: bytes, secret: str, *, now: int, event_id: str | None = None) -> WebhookRequest:
        key = _signing_key(secret)
        return WebhookRequest(
            body=body,
            headers={
                "content-type": "application/json",
                "user-agent": "Woovi-Webhook",
                SIGNATURE_HEADER: compute_signature(body, key),
            },
        )

    def sample_body(self, *, event_id: str, resource_id: str, status: str, amount: int, occurred_at: int) -> bytes:
        """A charge notification for the canonical `status`, shaped as Woovi's published examples. The charge's
        `correlationID` is `resource_id`; Woovi's bodies have no event id, so `event_id` only seeds the Pix's
        `endToEndId` of a paid charge (a real one is unique per Pix transaction)."""
        event, charge_status = sample_values(_SAMPLES, status, gateway="Woovi")
        transaction_id = base64.b16encode(resource_id.encode()[:16].ljust(16, b"0")).decode().lower()
        charge: dict[str, Any] = {
            "value": amount,
            "comment": "",
            "identifier": transaction_id,
            "transactionID": transaction_id,
            "status": charge_status,
            "additionalInfo": [],
            "discount": 0,
            "valueWithDiscount": amount,
            "expiresDate": iso_ms(occurred_at + 86_400),
            "type": "DYNAMIC",
            "correlationID": resource_id,
            "createdAt": iso_ms(occurred_at - 60),
            "updatedAt": iso_ms(occurred_at),
            "customer": {"name": "Cliente Teste", "correlationID": "ecd41c3b-487c-4719-b9f7-53b6dd6759cb"},
        }
        document: dict[str, Any] = {"event": event, "charge": charge}
        if charge_status == "COMPLETED":
            charge["paidAt"] = iso_ms(occurred_at)
            document["pix"] = {
                "value": amount,
                "time": iso_ms(occurred_at),
                "endToEndId": "E" + base64.b32encode(f"{event_id}:{resource_id}".encode()).decode()[:31],
                "transactionID": transaction_id,
                "status": "CONFIRMED",
                "type": "PAYMENT",
            }
        document["company"] = {"id": "6810ce3b892866f103d77ef2", "name": "Loja Simulada", "taxID": "57437573000102"}
        return json.dumps(document, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


sender = WooviSender()
