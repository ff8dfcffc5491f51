#!/bin/bash
O=/tmp/nn12/one.sh; G=/tmp/nn12/gpt0
$O w256l2s850 $G -layers 2 -width 256 -heads 8 -steps 850
$O w192l2s1150 $G -layers 2 -width 192 -heads 6 -steps 1150
$O w128l4s1450 $G -layers 4 -width 128 -heads 4 -steps 1450
$O w384l1s1050 $G -layers 1 -width 384 -heads 6 -steps 1050
$O w128l2s2500 $G -layers 2 -width 128 -heads 4 -steps 2500
$O w192l3s900 $G -layers 3 -width 192 -heads 6 -steps 900
