#!/bin/bash
O=/tmp/nn12/one.sh; G=/tmp/nn12/gpt0
$O w128l2s2700lr8 $G -layers 2 -width 128 -heads 4 -steps 2700 -lr 8e-3
$O w160l2s1700lr5 $G -layers 2 -width 160 -heads 5 -steps 1700 -lr 5e-3
$O w128l2b64s1250lr6 $G -layers 2 -width 128 -heads 4 -batch 64 -steps 1250 -lr 6e-3
$O w128l3s1800lr5 $G -layers 3 -width 128 -heads 4 -steps 1800 -lr 5e-3
