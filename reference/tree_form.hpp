// A summation tree (summation_tree.hpp) written down: a canonical compact form that parses back, for
// the numerics record and the CSVs, and the tree in words, for people.
//
// The compact form. Products are their k; ranges and repeats keep it short (a chain of 4096 FMAs is
// "[(0 1);{2}*4094+1]", 256 in-mma blocks of 16 "[(0:15);{16:31}*255+16]"):
//   item  := K                         the product k
//          | '(' list ')'              one addition rounded once: a binary add or FMA, or a fused node
//          | '[' item ';' steps ']'    a chain: the item, then each step adds its list to the running
//                                      sum in one rounding (a step of one item is a binary add or FMA)
//          | '<' K ':' K '>'            pairwise: recursive halving over the products a..b, as
//                                      pairwise_tree splits them (the left half floor(n / 2))
//   list  := elem (' ' elem)*          elem := item | K ':' K (the products a, a+1, ..., b)
//   steps := unit (';' unit)*          unit := list (one step)
//                                           | '{' steps '}*' N ('+'|'-') D   the steps N times, every
//                                             k shifted by D more each time
// Canonical: a node's children in increasing smallest k, three or more consecutive products as a
// range; a node with an internal child is a chain, which runs down through the child with the most
// products (the smallest k among equals) to a node of products only or a pairwise one; a node of four
// or more products summed as pairwise_tree sums them is '<a:b>'; repeats found greedily, shortest
// unit first, again until none is left. Equal trees give equal strings, and parse_compact_form of a
// string gives back the tree it was made from.
//
// Plain C++ (no CUDA header).
#pragma once
#include <string>

#include "reference/summation_tree.hpp"

namespace gemmlab {

std::string compact_form(const SummationTree& t);
// The tree of a compact form over K products. Throws std::invalid_argument naming the character
// where the text is not a tree of exactly the products 0 .. K-1, each once.
SummationTree parse_compact_form(const std::string& text, int K);

// A run-length description that reads in a line or a few, e.g. "an FMA chain over 4096 products: 128
// blocks of 32 in decreasing block order, increasing k within a block" or "8 parts of 512 products
// added one by one in increasing k; each part a chain of 32 fused nodes of 16 products (each also adds
// the running sum) in increasing k". The full tree: the compact form, or summation_tree.hpp.
std::string tree_in_words(const SummationTree& t);

}  // namespace gemmlab
