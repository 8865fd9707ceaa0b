#!/usr/bin/env python3
"""Mutated JSON Schemas for the structured-output compiler's error paths.

Takes MaskBench's schemas (under 6 KB), and in each one sets, replaces or deletes 1-4 keywords
with values of the wrong kind or odd values (false, null, "[", 1e300, {"$ref": "#"}...). Prints
deepinfer-so-check input lines (no instance tests), so a run shows whether every malformed schema
gets an error that names what is wrong (and none an exception's text, or a crash):

  zstd -dc ../shared/data/jsonschemabench/maskbench.jsonl.zst > /tmp/mb.jsonl
  python3 bench/so_mutations.py /tmp/mb.jsonl 1 4000 > /tmp/mut.jsonl
  build/recipe/deepinfer-so-check < /tmp/mut.jsonl > /tmp/mut.out.jsonl
  grep -c '"error":"invalid constraint' /tmp/mut.out.jsonl   # exceptions' text: 0 expected
"""
import copy
import json
import random
import sys

KEYWORDS = ['type', 'properties', 'items', 'prefixItems', 'additionalProperties', 'patternProperties', 'required',
            'enum', 'const', 'allOf', 'anyOf', 'oneOf', 'not', 'if', 'then', 'else', '$ref', 'minItems', 'maxItems',
            'minLength', 'maxLength', 'pattern', 'format', 'minimum', 'maximum', 'exclusiveMinimum',
            'exclusiveMaximum', 'multipleOf', 'uniqueItems', 'dependencies', 'dependentRequired',
            'dependentSchemas', 'propertyNames', 'minProperties', 'maxProperties', 'additionalItems', '$defs',
            'definitions']
VALUES = [True, False, None, [], {}, 0, -1, 1.5, 1e300, 'x', '', '#/', '#/$defs/none', [1, 'a'],
          {'type': 'string'}, {'type': 'array'}, {'type': ['string', 'null']}, [True], [{}], {'$ref': '#'},
          {'enum': []}, {'a': False}, '^(a|b)*$', '[', '\\', 2**63, -0.0, [[]], {'not': {}}, {'if': False}]


def objects(x, out):
    if isinstance(x, dict):
        out.append(x)
        for v in x.values():
            objects(v, out)
    elif isinstance(x, list):
        for v in x:
            objects(v, out)


def main():
    path, seed, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    rng = random.Random(seed)
    schemas = []
    for line in open(path):
        s = json.loads(line)['schema']
        s = json.loads(s) if isinstance(s, str) else s
        if len(json.dumps(s)) < 6000:
            schemas.append(s)
    for i in range(count):
        s = copy.deepcopy(rng.choice(schemas))
        for _ in range(rng.randint(1, 4)):
            found = []
            objects(s, found)
            if not found:
                break
            d = rng.choice(found)
            op = rng.random()
            if op < 0.5 or not d:
                d[rng.choice(KEYWORDS)] = copy.deepcopy(rng.choice(VALUES))
            elif op < 0.8:
                d[rng.choice(list(d))] = copy.deepcopy(rng.choice(VALUES))
            else:
                del d[rng.choice(list(d))]
        print(json.dumps({'file': f'mutation-{seed}-{i}', 'source': 'mutations', 'schema': s, 'tests': []}))


if __name__ == '__main__':
    main()
