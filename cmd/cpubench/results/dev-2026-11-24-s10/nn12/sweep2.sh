#!/bin/bash
O=/tmp/nn12/one.sh; G=/tmp/nn12/gpt0
$O w128l3s1800 $G -layers 3 -width 128 -heads 4 -steps 1800
$O w128l2b64s1300 $G -layers 2 -width 128 -heads 4 -batch 64 -steps 1300
$O w160l2s2000 $G -layers 2 -width 160 -heads 5 -steps 2000
$O w128l2s2600lr5 $G -layers 2 -width 128 -heads 4 -steps 2600 -lr 5e-3
$O w128l2c128b16s2500 $G -layers 2 -width 128 -heads 4 -context 128 -batch 16 -steps 2500
