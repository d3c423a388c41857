//go:build !purego

#include "textflag.h"

// func insertManyAVX2(bits *byte, numBlocks uint64, salts *[8]uint32, hashes *uint64, n int)
//
// For each hash h: block = ((h>>32) * numBlocks) >> 32; the eight words of
// the block are ORed with 1 << ((uint32(h) * salt[i]) >> 27), computed for
// all eight words at once in one YMM register.
TEXT ·insertManyAVX2(SB), NOSPLIT, $0-40
	MOVQ bits+0(FP), DI
	MOVQ numBlocks+8(FP), R8
	MOVQ salts+16(FP), AX
	MOVQ hashes+24(FP), SI
	MOVQ n+32(FP), CX
	VMOVDQU (AX), Y1         // Y1 = salts
	VPCMPEQD Y2, Y2, Y2
	VPSRLD $31, Y2, Y2       // Y2 = eight 32-bit ones

loop:
	MOVQ (SI), AX            // AX = h
	MOVQ AX, DX
	SHRQ $32, DX
	IMULQ R8, DX
	SHRQ $32, DX
	SHLQ $5, DX              // DX = byte offset of the block
	VMOVQ AX, X0             // VEX form: a legacy SSE move here would stall on the dirty upper YMM state
	VPBROADCASTD X0, Y0      // key in every lane
	VPMULLD Y1, Y0, Y0       // key * salt[i]
	VPSRLD $27, Y0, Y0       // bit index in each word
	VPSLLVD Y0, Y2, Y0       // 1 << bit index
	VPOR (DI)(DX*1), Y0, Y0
	VMOVDQU Y0, (DI)(DX*1)
	ADDQ $8, SI
	DECQ CX
	JNZ loop

	VZEROUPPER
	RET
