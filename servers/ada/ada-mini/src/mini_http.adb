package body Mini_HTTP is

   SP  : constant Stream_Element := Character'Pos (' ');
   HT  : constant Stream_Element := Character'Pos (ASCII.HT);

   function Is_Space (B : Stream_Element) return Boolean is
     (B = SP or else B = HT);

   function Lower (B : Stream_Element) return Stream_Element is
     (if B in Character'Pos ('A') .. Character'Pos ('Z') then B + 32 else B);

   --  True when Data equals the ASCII text S (case-sensitive).
   function Equals (Data : Stream_Element_Array; S : String) return Boolean;

   --  True when Data equals S ignoring ASCII case; S must be lower case.
   function Equals_No_Case
     (Data : Stream_Element_Array; S : String) return Boolean;

   function Equals (Data : Stream_Element_Array; S : String) return Boolean
   is
   begin
      if Data'Length /= S'Length then
         return False;
      end if;
      for K in Data'Range loop
         if Data (K)
           /= Character'Pos (S (S'First + Integer (K - Data'First)))
         then
            return False;
         end if;
      end loop;
      return True;
   end Equals;

   function Equals_No_Case
     (Data : Stream_Element_Array; S : String) return Boolean is
   begin
      if Data'Length /= S'Length then
         return False;
      end if;
      for K in Data'Range loop
         if Lower (Data (K))
           /= Character'Pos (S (S'First + Integer (K - Data'First)))
         then
            return False;
         end if;
      end loop;
      return True;
   end Equals_No_Case;

   -------------------
   -- Find_Head_End --
   -------------------

   function Find_Head_End
     (Data : Stream_Element_Array;
      From : Stream_Element_Offset) return Stream_Element_Offset is
   begin
      for I in Stream_Element_Offset'Max (From, Data'First + 1)
        .. Data'Last
      loop
         if Data (I) = LF then
            --  A blank line: LF LF, or LF CR LF.
            if Data (I - 1) = LF then
               return I;
            elsif Data (I - 1) = CR
              and then I - 2 >= Data'First
              and then Data (I - 2) = LF
            then
               return I;
            end if;
         end if;
      end loop;
      return 0;
   end Find_Head_End;

   -----------
   -- Parse --
   -----------

   function Parse (Text : Stream_Element_Array) return Request_Info is
      Info : Request_Info;

      --  Bounds of the current line, without its CRLF / LF.
      Line_First : Stream_Element_Offset := Text'First;
      Line_Last  : Stream_Element_Offset;

      Seen_Length : Boolean := False;

      --  Set Line_Last for the line starting at Line_First.
      procedure Find_Line_End;

      --  Parse "METHOD SP TARGET SP VERSION"; False when malformed.
      function Request_Line (Line : Stream_Element_Array) return Boolean;

      --  Parse one "name: value" field; False when malformed.
      function Header_Field (Line : Stream_Element_Array) return Boolean;

      --  Record the comma-separated tokens of a Connection field.
      procedure Connection_Tokens (Value : Stream_Element_Array);

      --  Decimal Content-Length; False when not a valid number.
      function Length_Value (Value : Stream_Element_Array) return Boolean;

      procedure Find_Line_End is
         I : Stream_Element_Offset := Line_First;
      begin
         while Text (I) /= LF loop   --  Text ends with LF: always found
            I := I + 1;
         end loop;
         Line_Last := I - 1;
         if Line_Last >= Line_First and then Text (Line_Last) = CR then
            Line_Last := Line_Last - 1;
         end if;
      end Find_Line_End;

      function Request_Line (Line : Stream_Element_Array) return Boolean is
         Sp1, Sp2 : Stream_Element_Offset := 0;
         Path_Last : Stream_Element_Offset;
      begin
         for I in Line'Range loop
            if Line (I) = SP then
               if Sp1 = 0 then
                  Sp1 := I;
               elsif Sp2 = 0 then
                  Sp2 := I;
               else
                  return False;   --  a third space
               end if;
            end if;
         end loop;
         if Sp1 <= Line'First or else Sp2 <= Sp1 + 1
           or else Sp2 = Line'Last
         then
            return False;
         end if;

         declare
            Verb    : Stream_Element_Array renames
              Line (Line'First .. Sp1 - 1);
            Target  : Stream_Element_Array renames
              Line (Sp1 + 1 .. Sp2 - 1);
            Version : Stream_Element_Array renames
              Line (Sp2 + 1 .. Line'Last);
         begin
            if Equals (Verb, "GET") then
               Info.Method := GET;
            elsif Equals (Verb, "HEAD") then
               Info.Method := HEAD;
            else
               Info.Method := Other;
            end if;

            --  The path ends at the query or fragment.
            Path_Last := Target'Last;
            for I in Target'Range loop
               if Target (I) = Character'Pos ('?')
                 or else Target (I) = Character'Pos ('#')
               then
                  Path_Last := I - 1;
                  exit;
               end if;
            end loop;
            Info.Is_Api := Equals (Target (Target'First .. Path_Last), "/api");

            --  "HTTP/1.x"; anything else that looks like HTTP is an
            --  unsupported version, the rest is malformed.
            if Version'Length = 8
              and then Equals (Version (Version'First .. Version'First + 6),
                               "HTTP/1.")
              and then Version (Version'Last) in
                         Character'Pos ('0') .. Character'Pos ('9')
            then
               Info.HTTP_1_0 := Version (Version'Last) = Character'Pos ('0');
               return True;
            elsif Version'Length >= 5
              and then Equals (Version (Version'First .. Version'First + 4),
                               "HTTP/")
            then
               Info.Status := Bad_Version;
               return False;
            else
               return False;
            end if;
         end;
      end Request_Line;

      procedure Connection_Tokens (Value : Stream_Element_Array) is
         First : Stream_Element_Offset := Value'First;
         Last  : Stream_Element_Offset;
      begin
         while First <= Value'Last loop
            Last := First;
            while Last <= Value'Last
              and then Value (Last) /= Character'Pos (',')
            loop
               Last := Last + 1;
            end loop;
            --  Token is Value (First .. Last - 1), trimmed.
            declare
               A : Stream_Element_Offset := First;
               B : Stream_Element_Offset := Last - 1;
            begin
               while A <= B and then Is_Space (Value (A)) loop
                  A := A + 1;
               end loop;
               while B >= A and then Is_Space (Value (B)) loop
                  B := B - 1;
               end loop;
               if Equals_No_Case (Value (A .. B), "close") then
                  Info.Wants_Close := True;
               elsif Equals_No_Case (Value (A .. B), "keep-alive") then
                  Info.Wants_Keep_Alive := True;
               end if;
            end;
            First := Last + 1;
         end loop;
      end Connection_Tokens;

      function Length_Value (Value : Stream_Element_Array) return Boolean is
         N : Stream_Element_Count := 0;
      begin
         if Value'Length = 0 or else Value'Length > 15 then
            return False;   --  empty, or absurdly large
         end if;
         for B of Value loop
            if B not in Character'Pos ('0') .. Character'Pos ('9') then
               return False;
            end if;
            N := N * 10 + Stream_Element_Count (B - Character'Pos ('0'));
         end loop;
         if Seen_Length and then N /= Info.Content_Length then
            return False;   --  conflicting duplicates
         end if;
         Seen_Length := True;
         Info.Content_Length := N;
         return True;
      end Length_Value;

      function Header_Field (Line : Stream_Element_Array) return Boolean is
         Colon : Stream_Element_Offset := 0;
         A, B  : Stream_Element_Offset;
      begin
         if Is_Space (Line (Line'First)) then
            return False;   --  obsolete line folding: rejected
         end if;
         for I in Line'Range loop
            if Line (I) = Character'Pos (':') then
               Colon := I;
               exit;
            elsif Is_Space (Line (I)) then
               return False;   --  no white space inside or after a name
            end if;
         end loop;
         if Colon <= Line'First then
            return False;
         end if;

         A := Colon + 1;
         B := Line'Last;
         while A <= B and then Is_Space (Line (A)) loop
            A := A + 1;
         end loop;
         while B >= A and then Is_Space (Line (B)) loop
            B := B - 1;
         end loop;

         declare
            Name  : Stream_Element_Array renames
              Line (Line'First .. Colon - 1);
            Value : Stream_Element_Array renames Line (A .. B);
         begin
            if Equals_No_Case (Name, "connection") then
               Connection_Tokens (Value);
            elsif Equals_No_Case (Name, "content-length") then
               return Length_Value (Value);
            elsif Equals_No_Case (Name, "transfer-encoding") then
               Info.Has_Body_Coding := True;
            end if;
         end;
         return True;
      end Header_Field;

   begin
      Find_Line_End;
      if not Request_Line (Text (Line_First .. Line_Last)) then
         return Info;   --  Status is Malformed or Bad_Version
      end if;

      loop
         --  Next line: after the LF that ends the current one.
         Line_First := Line_Last + 1;
         while Text (Line_First) /= LF loop   --  skip the CR, if any
            Line_First := Line_First + 1;
         end loop;
         Line_First := Line_First + 1;
         exit when Line_First > Text'Last;
         Find_Line_End;
         exit when Line_Last < Line_First;   --  the blank line
         if not Header_Field (Text (Line_First .. Line_Last)) then
            Info.Status := Malformed;
            return Info;
         end if;
      end loop;

      Info.Status := Ok;
      return Info;
   end Parse;

end Mini_HTTP;
