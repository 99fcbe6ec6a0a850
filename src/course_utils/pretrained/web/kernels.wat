;; Attention, step by step: the three matrix products of SmolLM2 in the browser (MIT licence).
;;
;; WebAssembly with 128-bit SIMD: four float32 lanes at a time. Assembled into kernels.wasm when
;; the site is built (course_utils.pretrained.smollm2_web.wasm_bytes, with the `wasmtime` package's
;; wat2wasm); llama.mjs calls it and keeps plain JavaScript loops for a browser without it.
;;
;; All pointers are byte offsets in the one memory the page gives (imported as env.memory):
;;   codes4  the Q4_1 blocks' 4-bit codes, 16 bytes a block: byte j holds code j (low 4 bits) and
;;           code j + 16 (high 4 bits), as gguf.quants reads them
;;   d4, m4  each Q4_1 block's scale and minimum (float16 in the file, float32 here): w = d q + m
;;   codes8  the Q8_0 blocks' 8-bit codes, 32 bytes a block; d8 the scales: w = d q
;;   x       the inputs, float32, T rows of nb * 32; y the outputs, float32, T rows of `rows`
;; A matrix W (rows x nb*32) is stored row by row, its first block at index blk0.
(module
  (import "env" "memory" (memory 1))

  ;; y = W x for one input (a decoding step). xs: the input's sum over each block of 32, so that
  ;; sum_j (d q_j + m) x_j = d (sum_j q_j x_j) + m xs[b].
  (func (export "mv_q4")
    (param $codes i32) (param $d i32) (param $m i32) (param $blk0 i32) (param $rows i32)
    (param $nb i32) (param $x i32) (param $xs i32) (param $y i32)
    (local $r i32) (local $b i32) (local $blk i32) (local $xp i32)
    (local $c v128) (local $lo v128) (local $hi v128) (local $t v128) (local $s v128)
    (local $acc v128) (local $am f32)
    (local.set $r (i32.const 0))
    (block $rows_done (loop $row
      (br_if $rows_done (i32.ge_u (local.get $r) (local.get $rows)))
      (local.set $acc (v128.const f32x4 0 0 0 0))
      (local.set $am (f32.const 0))
      (local.set $blk (i32.add (local.get $blk0) (i32.mul (local.get $r) (local.get $nb))))
      (local.set $b (i32.const 0))
      (local.set $xp (local.get $x))
      (block $blocks_done (loop $block
        (br_if $blocks_done (i32.ge_u (local.get $b) (local.get $nb)))
        (local.set $c (v128.load (i32.add (local.get $codes) (i32.shl (local.get $blk) (i32.const 4)))))
        (local.set $lo (v128.and (local.get $c) (v128.const i8x16 15 15 15 15 15 15 15 15 15 15 15 15 15 15 15 15)))
        (local.set $hi (i8x16.shr_u (local.get $c) (i32.const 4)))
        ;; codes 0..15 (low halves) times x[0..15]
        (local.set $t (i16x8.extend_low_i8x16_u (local.get $lo)))
        (local.set $s (f32x4.mul (f32x4.convert_i32x4_u (i32x4.extend_low_i16x8_u (local.get $t)))
                                 (v128.load offset=0 (local.get $xp))))
        (local.set $s (f32x4.add (local.get $s) (f32x4.mul (f32x4.convert_i32x4_u (i32x4.extend_high_i16x8_u (local.get $t)))
                                 (v128.load offset=16 (local.get $xp)))))
        (local.set $t (i16x8.extend_high_i8x16_u (local.get $lo)))
        (local.set $s (f32x4.add (local.get $s) (f32x4.mul (f32x4.convert_i32x4_u (i32x4.extend_low_i16x8_u (local.get $t)))
                                 (v128.load offset=32 (local.get $xp)))))
        (local.set $s (f32x4.add (local.get $s) (f32x4.mul (f32x4.convert_i32x4_u (i32x4.extend_high_i16x8_u (local.get $t)))
                                 (v128.load offset=48 (local.get $xp)))))
        ;; codes 16..31 (high halves) times x[16..31]
        (local.set $t (i16x8.extend_low_i8x16_u (local.get $hi)))
        (local.set $s (f32x4.add (local.get $s) (f32x4.mul (f32x4.convert_i32x4_u (i32x4.extend_low_i16x8_u (local.get $t)))
                                 (v128.load offset=64 (local.get $xp)))))
        (local.set $s (f32x4.add (local.get $s) (f32x4.mul (f32x4.convert_i32x4_u (i32x4.extend_high_i16x8_u (local.get $t)))
                                 (v128.load offset=80 (local.get $xp)))))
        (local.set $t (i16x8.extend_high_i8x16_u (local.get $hi)))
        (local.set $s (f32x4.add (local.get $s) (f32x4.mul (f32x4.convert_i32x4_u (i32x4.extend_low_i16x8_u (local.get $t)))
                                 (v128.load offset=96 (local.get $xp)))))
        (local.set $s (f32x4.add (local.get $s) (f32x4.mul (f32x4.convert_i32x4_u (i32x4.extend_high_i16x8_u (local.get $t)))
                                 (v128.load offset=112 (local.get $xp)))))
        (local.set $acc (f32x4.add (local.get $acc)
          (f32x4.mul (local.get $s) (f32x4.splat (f32.load (i32.add (local.get $d) (i32.shl (local.get $blk) (i32.const 2))))))))
        (local.set $am (f32.add (local.get $am)
          (f32.mul (f32.load (i32.add (local.get $m) (i32.shl (local.get $blk) (i32.const 2))))
                   (f32.load (i32.add (local.get $xs) (i32.shl (local.get $b) (i32.const 2)))))))
        (local.set $blk (i32.add (local.get $blk) (i32.const 1)))
        (local.set $b (i32.add (local.get $b) (i32.const 1)))
        (local.set $xp (i32.add (local.get $xp) (i32.const 128)))
        (br $block)))
      (f32.store (i32.add (local.get $y) (i32.shl (local.get $r) (i32.const 2)))
        (f32.add (local.get $am)
          (f32.add (f32.add (f32x4.extract_lane 0 (local.get $acc)) (f32x4.extract_lane 1 (local.get $acc)))
                   (f32.add (f32x4.extract_lane 2 (local.get $acc)) (f32x4.extract_lane 3 (local.get $acc))))))
      (local.set $r (i32.add (local.get $r) (i32.const 1)))
      (br $row))))

  ;; Y = X W^T for T inputs (a prompt): each block's 32 weights are dequantised once, into eight
  ;; vectors, and used for every input; acc holds one vector per input (T x 16 bytes).
  (func (export "mm_q4")
    (param $codes i32) (param $d i32) (param $m i32) (param $blk0 i32) (param $rows i32)
    (param $nb i32) (param $x i32) (param $y i32) (param $T i32) (param $accp i32)
    (local $r i32) (local $b i32) (local $blk i32) (local $i i32) (local $xp i32) (local $ap i32)
    (local $rowbytes i32)
    (local $c v128) (local $lo v128) (local $hi v128) (local $t v128) (local $dv v128) (local $mv v128)
    (local $w0 v128) (local $w1 v128) (local $w2 v128) (local $w3 v128)
    (local $w4 v128) (local $w5 v128) (local $w6 v128) (local $w7 v128) (local $s v128)
    (local.set $rowbytes (i32.shl (local.get $nb) (i32.const 7)))  ;; nb * 32 floats * 4 bytes
    (local.set $r (i32.const 0))
    (block $rows_done (loop $row
      (br_if $rows_done (i32.ge_u (local.get $r) (local.get $rows)))
      ;; acc[i] = 0 for every input
      (local.set $i (i32.const 0))
      (block $z_done (loop $z
        (br_if $z_done (i32.ge_u (local.get $i) (local.get $T)))
        (v128.store (i32.add (local.get $accp) (i32.shl (local.get $i) (i32.const 4))) (v128.const f32x4 0 0 0 0))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $z)))
      (local.set $blk (i32.add (local.get $blk0) (i32.mul (local.get $r) (local.get $nb))))
      (local.set $b (i32.const 0))
      (block $blocks_done (loop $block
        (br_if $blocks_done (i32.ge_u (local.get $b) (local.get $nb)))
        (local.set $c (v128.load (i32.add (local.get $codes) (i32.shl (local.get $blk) (i32.const 4)))))
        (local.set $lo (v128.and (local.get $c) (v128.const i8x16 15 15 15 15 15 15 15 15 15 15 15 15 15 15 15 15)))
        (local.set $hi (i8x16.shr_u (local.get $c) (i32.const 4)))
        (local.set $dv (f32x4.splat (f32.load (i32.add (local.get $d) (i32.shl (local.get $blk) (i32.const 2))))))
        (local.set $mv (f32x4.splat (f32.load (i32.add (local.get $m) (i32.shl (local.get $blk) (i32.const 2))))))
        (local.set $t (i16x8.extend_low_i8x16_u (local.get $lo)))
        (local.set $w0 (f32x4.add (f32x4.mul (f32x4.convert_i32x4_u (i32x4.extend_low_i16x8_u (local.get $t))) (local.get $dv)) (local.get $mv)))
        (local.set $w1 (f32x4.add (f32x4.mul (f32x4.convert_i32x4_u (i32x4.extend_high_i16x8_u (local.get $t))) (local.get $dv)) (local.get $mv)))
        (local.set $t (i16x8.extend_high_i8x16_u (local.get $lo)))
        (local.set $w2 (f32x4.add (f32x4.mul (f32x4.convert_i32x4_u (i32x4.extend_low_i16x8_u (local.get $t))) (local.get $dv)) (local.get $mv)))
        (local.set $w3 (f32x4.add (f32x4.mul (f32x4.convert_i32x4_u (i32x4.extend_high_i16x8_u (local.get $t))) (local.get $dv)) (local.get $mv)))
        (local.set $t (i16x8.extend_low_i8x16_u (local.get $hi)))
        (local.set $w4 (f32x4.add (f32x4.mul (f32x4.convert_i32x4_u (i32x4.extend_low_i16x8_u (local.get $t))) (local.get $dv)) (local.get $mv)))
        (local.set $w5 (f32x4.add (f32x4.mul (f32x4.convert_i32x4_u (i32x4.extend_high_i16x8_u (local.get $t))) (local.get $dv)) (local.get $mv)))
        (local.set $t (i16x8.extend_high_i8x16_u (local.get $hi)))
        (local.set $w6 (f32x4.add (f32x4.mul (f32x4.convert_i32x4_u (i32x4.extend_low_i16x8_u (local.get $t))) (local.get $dv)) (local.get $mv)))
        (local.set $w7 (f32x4.add (f32x4.mul (f32x4.convert_i32x4_u (i32x4.extend_high_i16x8_u (local.get $t))) (local.get $dv)) (local.get $mv)))
        ;; every input: acc[i] += w . x_i[block]
        (local.set $xp (i32.add (local.get $x) (i32.shl (local.get $b) (i32.const 7))))
        (local.set $ap (local.get $accp))
        (local.set $i (i32.const 0))
        (block $in_done (loop $in
          (br_if $in_done (i32.ge_u (local.get $i) (local.get $T)))
          (local.set $s (f32x4.add
            (f32x4.add (f32x4.add (f32x4.mul (local.get $w0) (v128.load offset=0 (local.get $xp)))
                                  (f32x4.mul (local.get $w1) (v128.load offset=16 (local.get $xp))))
                       (f32x4.add (f32x4.mul (local.get $w2) (v128.load offset=32 (local.get $xp)))
                                  (f32x4.mul (local.get $w3) (v128.load offset=48 (local.get $xp)))))
            (f32x4.add (f32x4.add (f32x4.mul (local.get $w4) (v128.load offset=64 (local.get $xp)))
                                  (f32x4.mul (local.get $w5) (v128.load offset=80 (local.get $xp))))
                       (f32x4.add (f32x4.mul (local.get $w6) (v128.load offset=96 (local.get $xp)))
                                  (f32x4.mul (local.get $w7) (v128.load offset=112 (local.get $xp)))))))
          (v128.store (local.get $ap) (f32x4.add (v128.load (local.get $ap)) (local.get $s)))
          (local.set $ap (i32.add (local.get $ap) (i32.const 16)))
          (local.set $xp (i32.add (local.get $xp) (local.get $rowbytes)))
          (local.set $i (i32.add (local.get $i) (i32.const 1)))
          (br $in)))
        (local.set $blk (i32.add (local.get $blk) (i32.const 1)))
        (local.set $b (i32.add (local.get $b) (i32.const 1)))
        (br $block)))
      ;; y[i][r] = the four lanes of acc[i] summed
      (local.set $i (i32.const 0))
      (block $out_done (loop $out
        (br_if $out_done (i32.ge_u (local.get $i) (local.get $T)))
        (local.set $s (v128.load (i32.add (local.get $accp) (i32.shl (local.get $i) (i32.const 4)))))
        (f32.store
          (i32.add (local.get $y) (i32.shl (i32.add (i32.mul (local.get $i) (local.get $rows)) (local.get $r)) (i32.const 2)))
          (f32.add (f32.add (f32x4.extract_lane 0 (local.get $s)) (f32x4.extract_lane 1 (local.get $s)))
                   (f32.add (f32x4.extract_lane 2 (local.get $s)) (f32x4.extract_lane 3 (local.get $s)))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $out)))
      (local.set $r (i32.add (local.get $r) (i32.const 1)))
      (br $row))))

  ;; y = W x for a Q8_0 matrix (the tied output layer: 49152 rows of 576).
  (func (export "mv_q8")
    (param $codes i32) (param $d i32) (param $blk0 i32) (param $rows i32) (param $nb i32)
    (param $x i32) (param $y i32)
    (local $r i32) (local $b i32) (local $blk i32) (local $xp i32) (local $cp i32)
    (local $c v128) (local $t v128) (local $s v128) (local $acc v128)
    (local.set $r (i32.const 0))
    (block $rows_done (loop $row
      (br_if $rows_done (i32.ge_u (local.get $r) (local.get $rows)))
      (local.set $acc (v128.const f32x4 0 0 0 0))
      (local.set $blk (i32.add (local.get $blk0) (i32.mul (local.get $r) (local.get $nb))))
      (local.set $b (i32.const 0))
      (local.set $xp (local.get $x))
      (block $blocks_done (loop $block
        (br_if $blocks_done (i32.ge_u (local.get $b) (local.get $nb)))
        (local.set $cp (i32.add (local.get $codes) (i32.shl (local.get $blk) (i32.const 5))))
        (local.set $c (v128.load offset=0 (local.get $cp)))
        (local.set $t (i16x8.extend_low_i8x16_s (local.get $c)))
        (local.set $s (f32x4.mul (f32x4.convert_i32x4_s (i32x4.extend_low_i16x8_s (local.get $t))) (v128.load offset=0 (local.get $xp))))
        (local.set $s (f32x4.add (local.get $s) (f32x4.mul (f32x4.convert_i32x4_s (i32x4.extend_high_i16x8_s (local.get $t))) (v128.load offset=16 (local.get $xp)))))
        (local.set $t (i16x8.extend_high_i8x16_s (local.get $c)))
        (local.set $s (f32x4.add (local.get $s) (f32x4.mul (f32x4.convert_i32x4_s (i32x4.extend_low_i16x8_s (local.get $t))) (v128.load offset=32 (local.get $xp)))))
        (local.set $s (f32x4.add (local.get $s) (f32x4.mul (f32x4.convert_i32x4_s (i32x4.extend_high_i16x8_s (local.get $t))) (v128.load offset=48 (local.get $xp)))))
        (local.set $c (v128.load offset=16 (local.get $cp)))
        (local.set $t (i16x8.extend_low_i8x16_s (local.get $c)))
        (local.set $s (f32x4.add (local.get $s) (f32x4.mul (f32x4.convert_i32x4_s (i32x4.extend_low_i16x8_s (local.get $t))) (v128.load offset=64 (local.get $xp)))))
        (local.set $s (f32x4.add (local.get $s) (f32x4.mul (f32x4.convert_i32x4_s (i32x4.extend_high_i16x8_s (local.get $t))) (v128.load offset=80 (local.get $xp)))))
        (local.set $t (i16x8.extend_high_i8x16_s (local.get $c)))
        (local.set $s (f32x4.add (local.get $s) (f32x4.mul (f32x4.convert_i32x4_s (i32x4.extend_low_i16x8_s (local.get $t))) (v128.load offset=96 (local.get $xp)))))
        (local.set $s (f32x4.add (local.get $s) (f32x4.mul (f32x4.convert_i32x4_s (i32x4.extend_high_i16x8_s (local.get $t))) (v128.load offset=112 (local.get $xp)))))
        (local.set $acc (f32x4.add (local.get $acc)
          (f32x4.mul (local.get $s) (f32x4.splat (f32.load (i32.add (local.get $d) (i32.shl (local.get $blk) (i32.const 2))))))))
        (local.set $blk (i32.add (local.get $blk) (i32.const 1)))
        (local.set $b (i32.add (local.get $b) (i32.const 1)))
        (local.set $xp (i32.add (local.get $xp) (i32.const 128)))
        (br $block)))
      (f32.store (i32.add (local.get $y) (i32.shl (local.get $r) (i32.const 2)))
        (f32.add (f32.add (f32x4.extract_lane 0 (local.get $acc)) (f32x4.extract_lane 1 (local.get $acc)))
                 (f32.add (f32x4.extract_lane 2 (local.get $acc)) (f32x4.extract_lane 3 (local.get $acc)))))
      (local.set $r (i32.add (local.get $r) (i32.const 1)))
      (br $row))))
)
