#!/usr/bin/env python3
"""Writes a recorded-style Vanguard trace (docs/trace-format.md, version 1) of KServe v2 REST
infer requests with a realistic size mix, and optionally the one template request a user
without a recording would send.

Sizes: each request carries one FP32 input of n elements, n lognormal with median
--nominal_elements and log-sd --sigma, clamped to [1/16, 16] x the median (the simulated
predictor's ContentCost and the profile's DrawCost use the same clamp). The sizes are the
lognormal's quantiles at (i + 0.5) / records, shuffled, so even a short trace carries the
exact mix rather than a sample of it. Arrivals are Poisson at --rate (the replayer scales the
recorded timing to its target rate, or replaces it with its own schedule).

  tests/bench/make_trace.py --output=mix.vtr --model=sim --nominal_elements=256 --sigma=0.5 \\
      --template_out=template.json
  vanguard-replayer run --target=http://127.0.0.1:8000 --model=sim --trace=mix.vtr \\
      --schedule=poisson --rate=100 --duration=10s

Written from the format's specification with Python's standard library only (no code shared
with the replayer's TraceWriter, so a misreading on either side shows up as a failed replay).
"""
import argparse
import json
import math
import random
import statistics
import struct
import sys

MAGIC = b"VGTRACE\n"
VERSION = 1
MAX_COST = 16.0


def _crc32c_table():
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_TABLE = _crc32c_table()


def crc32c(data: bytes) -> int:
    """CRC-32C (Castagnoli, reflected 0x82F63B78, init and xor-out 0xFFFFFFFF)."""
    crc = 0xFFFFFFFF
    table = _TABLE
    for b in data:
        crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def varint(value: int) -> bytes:
    if value < 0:
        raise ValueError("varint of a negative value")
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def string(data: bytes) -> bytes:
    return varint(len(data)) + data


def record(interarrival_us: int, model: str, payload: bytes) -> bytes:
    body = b"".join([
        varint(interarrival_us),
        string(b"kserve_v2_rest"),
        string(model.encode()),
        string(b"POST"),
        string(f"/v2/models/{model}/infer".encode()),
        varint(1),
        string(b"Content-Type"),
        string(b"application/json"),
        string(payload),
    ])
    return varint(len(body)) + body + struct.pack("<I", crc32c(body))


def infer_body(elements: int, index: int) -> bytes:
    # Small integer values keep the body compact; FP32 accepts JSON integers.
    data = ",".join(str((index + k) % 10) for k in range(elements))
    return (
        '{"id":"r%d","inputs":[{"name":"input0","shape":[1,%d],"datatype":"FP32","data":[%s]}]}'
        % (index, elements, data)
    ).encode()


def sizes(records: int, median: int, sigma: float, rng: random.Random):
    """The lognormal's quantiles at (i + 0.5) / records, clamped and rounded, shuffled."""
    if sigma <= 0:
        return [median] * records
    normal = statistics.NormalDist(0, sigma)
    lo, hi = median / MAX_COST, median * MAX_COST
    out = []
    for i in range(records):
        size = median * math.exp(normal.inv_cdf((i + 0.5) / records))
        out.append(max(1, int(round(min(max(size, lo), hi)))))
    rng.shuffle(out)
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--output", required=True, help="the trace file to write (.vtr)")
    parser.add_argument("--model", default="sim", help="model name in each request's path")
    parser.add_argument("--nominal_elements", type=int, default=256,
                        help="median elements per request (the profile's nominal_elements)")
    parser.add_argument("--sigma", type=float, default=0.5,
                        help="log-sd of the size mix (the profile's cost_sigma); 0: all median")
    parser.add_argument("--records", type=int, default=4000, help="requests in the trace")
    parser.add_argument("--rate", type=float, default=100.0,
                        help="recorded Poisson arrival rate, requests/s")
    parser.add_argument("--seed", type=int, default=1, help="seed of the shuffle and arrivals")
    parser.add_argument("--template_out", default="",
                        help="also write one request of the median size (a JSON body) here")
    args = parser.parse_args(argv)
    if args.nominal_elements < 1 or args.records < 1 or not args.rate > 0 or args.sigma < 0:
        parser.error("--nominal_elements >= 1, --records >= 1, --rate > 0, --sigma >= 0")

    rng = random.Random(args.seed)
    mix = sizes(args.records, args.nominal_elements, args.sigma, rng)
    with open(args.output, "wb") as out:
        out.write(MAGIC + struct.pack("<I", VERSION))
        for i, elements in enumerate(mix):
            gap_us = 0 if i == 0 else max(1, int(round(rng.expovariate(args.rate) * 1e6)))
            out.write(record(gap_us, args.model, infer_body(elements, i)))
    if args.template_out:
        with open(args.template_out, "wb") as out:
            out.write(infer_body(args.nominal_elements, 0))
    mean = sum(mix) / len(mix)
    print(f"trace={args.output} records={len(mix)} median_elements={sorted(mix)[len(mix) // 2]} "
          f"mean_elements={mean:.1f} min_elements={min(mix)} max_elements={max(mix)} "
          f"sigma={args.sigma} rate={args.rate}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
