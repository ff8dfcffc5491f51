#!/bin/bash
O=/tmp/nn12/one.sh; G=/tmp/nn12/gpt0
$O w128l2b64s1400lr6 $G -layers 2 -width 128 -heads 4 -batch 64 -steps 1400 -lr 6e-3
$O w128l2b64s1400lr8 $G -layers 2 -width 128 -heads 4 -batch 64 -steps 1400 -lr 8e-3
$O w128l2b128s700lr8 $G -layers 2 -width 128 -heads 4 -batch 128 -steps 700 -lr 8e-3
