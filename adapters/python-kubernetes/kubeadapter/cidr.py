"""IP address ranges, as the configuration's `pod_cidr`, `service_cidr` and
`api_server_cidr` give them and NetworkPolicies take them. Read as the Rust
adapter reads them (adapter-kubernetes/src/cidr.rs): `address/prefix`, the
prefix in canonical digits, the address masked to the prefix
(`10.1.2.3/8` is `10.0.0.0/8`)."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Union

Address = Union[ipaddress.IPv4Address, ipaddress.IPv6Address]


class CidrError(ValueError):
    """Why a text is not a CIDR, in words that follow it in a message."""


@dataclass(frozen=True)
class Cidr:
    """An address range: its network address and prefix length."""

    address: Address
    prefix: int

    @property
    def is_ipv4(self) -> bool:
        """Whether it is an IPv4 range."""
        return self.address.version == 4

    def __str__(self) -> str:
        return f"{self.address}/{self.prefix}"

    def covers(self, other: "Cidr") -> bool:
        """Whether every address of `other` is inside this range. Two ranges
        either nest or are disjoint."""
        if self.is_ipv4 != other.is_ipv4 or other.prefix < self.prefix:
            return False
        mine = ipaddress.ip_network(f"{self.address}/{self.prefix}")
        return other.address in mine


def parse(text: str) -> Cidr:
    """Parse `address/prefix`; raises `CidrError` saying why not."""
    address_text, sep, prefix_text = text.partition("/")
    if not sep:
        raise CidrError("an address and a prefix length are separated by `/`")
    if "%" in address_text:
        raise CidrError(f"`{address_text}` is not an IPv4 or IPv6 address")
    try:
        address = ipaddress.ip_address(address_text)
    except ValueError:
        raise CidrError(f"`{address_text}` is not an IPv4 or IPv6 address") from None
    most = 32 if address.version == 4 else 128
    canonical = (
        0 < len(prefix_text) <= 3
        and all("0" <= c <= "9" for c in prefix_text)
        and (prefix_text == "0" or not prefix_text.startswith("0"))
    )
    if not canonical or int(prefix_text) > most:
        raise CidrError(f"the prefix length must be a number from 0 to {most}")
    prefix = int(prefix_text)
    network = ipaddress.ip_network(f"{address}/{prefix}", strict=False)
    return Cidr(address=network.network_address, prefix=prefix)


def everything(v4: bool) -> Cidr:
    """The whole of a family: `0.0.0.0/0` or `::/0`."""
    return parse("0.0.0.0/0" if v4 else "::/0")
